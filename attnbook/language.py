"""A tiny generated language with known rules, and its word-level tokeniser (chapter 15).

Sentences such as ``the big cat that chases some dogs sleeps .`` are drawn
from a small grammar whose rules are written down here, so whether a
sentence follows them can be checked exactly (`is_grammatical`). The rules:

- a subject is a determiner, maybe an adjective, and a noun, maybe followed
  by a relative clause, ``that`` and a verb phrase;
- a verb phrase is an intransitive verb, or a transitive verb and an object
  (determiner, maybe an adjective, and a noun);
- singular and plural agree: ``a`` only with a singular noun, ``some``
  only with a plural one (``the`` with both), and each verb, the one in the
  relative clause and the main one, with its subject noun, however far back
  that noun is;
- a sentence ends with ``.``.

The language is finite (about 2.4 million sentences), so the rules are a
regular expression. Nothing here imports torch: the model side is
`attnbook.lm`.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ._checks import as_ids, flag, generator, positive_int, probability_in

__all__ = ["WORDS", "VOCAB", "PAD", "BOS", "END", "sentence", "corpus", "is_grammatical",
           "log_prob", "encode", "decode", "attractor_prefixes", "verb_ids"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: The word classes; the first of each pair is singular, the second plural.
WORDS = {
    "det": (("the", "a"), ("the", "some")),
    "noun": (("cat", "dog", "bird", "fox"), ("cats", "dogs", "birds", "foxes")),
    "intransitive": (("runs", "sleeps"), ("run", "sleep")),
    "transitive": (("sees", "likes", "chases"), ("see", "like", "chase")),
}
ADJECTIVES = ("big", "small", "red")
#: Special tokens. PAD pads a batch (id 0), BOS starts every sentence (id 1)
#: and END, the full stop ``.``, ends it; `decode` stops after the first END.
PAD, BOS, END, THAT = "<pad>", "<bos>", ".", "that"
#: Every token, padding (id 0) and the start of a sentence (id 1) first.
VOCAB = (PAD, BOS, END, THAT, *ADJECTIVES,
         *dict.fromkeys(w for pair in WORDS.values() for words in pair for w in words))
_ID = {word: i for i, word in enumerate(VOCAB)}


def _one_of(words) -> str:
    return "(?:" + "|".join(words) + ")"


def _noun_phrase(plural: int) -> str:
    det, noun = WORDS["det"][plural], WORDS["noun"][plural]
    return f"{_one_of(det)} (?:{_one_of(ADJECTIVES)} )?{_one_of(noun)}"


def _verb_phrase(plural: int) -> str:
    objects = f"(?:{_noun_phrase(0)}|{_noun_phrase(1)})"
    return (f"(?:{_one_of(WORDS['intransitive'][plural])}"
            f"|{_one_of(WORDS['transitive'][plural])} {objects})")


def _clause(plural: int) -> str:
    subject = f"{_noun_phrase(plural)}(?: that {_verb_phrase(plural)})?"
    return f"{subject} {_verb_phrase(plural)}"


_SENTENCE = re.compile(f"(?:{_clause(0)}|{_clause(1)}) \\.")


def is_grammatical(text: str) -> bool:
    """Whether `text` is a sentence of the language, words separated by single spaces.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    text : str
        E.g. ``"the cat that sees some dogs runs ."``.

    Returns
    -------
    bool
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _SENTENCE.fullmatch(text) is not None


def log_prob(text: str, relative: float = 0.4, adjective: float = 0.3,
             transitive: float = 0.6) -> float:
    """The natural log of the probability that `sentence` draws `text`.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Every grammatical sentence has exactly one derivation (its nouns fix
    the number of each ``the``), so its probability is the product of the
    choices made to draw it. Minus its mean over sentences, divided by their
    mean number of predicted tokens, is the language's entropy per token,
    the lowest loss a model can reach.

    Parameters
    ----------
    text : str
        A grammatical sentence.
    relative, adjective, transitive : float
        As in `sentence`: probabilities in [0, 1].

    Returns
    -------
    float
        At most 0; ``-inf`` if these probabilities cannot draw `text`
        (``relative=0`` and a sentence with ``that``, for instance).

    Raises
    ------
    TypeError
        If a probability is not a real number (a bool is refused).
    ValueError
        If `text` is not grammatical, or a probability is NaN or outside [0, 1].
    """
    relative, adjective, transitive = _probabilities(relative, adjective, transitive)
    if not is_grammatical(text):
        raise ValueError(f"text must be a grammatical sentence (it has probability 0 "
                         f"otherwise); got {text!r}")
    words = text.split()[:-1]                                       # without END
    log_p = _log(0.5)                                               # the subject's number

    def phrase(i: int) -> tuple[float, int]:
        # determiner (one of 2), maybe an adjective (one of 3), noun (one of 4)
        has_adjective = words[i + 1] in ADJECTIVES
        lp = _log(0.5 / 4) + (_log(adjective) - math.log(3) if has_adjective
                                   else _log(1 - adjective))
        return lp, i + 2 + has_adjective

    def verbs(i: int) -> tuple[float, int]:
        if any(words[i] in WORDS["transitive"][p] for p in (0, 1)):
            lp, j = phrase(i + 1)
            return _log(transitive) - math.log(3) + _log(0.5) + lp, j
        return _log((1 - transitive) / 2), i + 1

    lp, i = phrase(0)
    log_p += lp
    if words[i] == THAT:
        lp, i = verbs(i + 1)
        log_p += _log(relative) + lp
    else:
        log_p += _log(1 - relative)
    lp, i = verbs(i)
    return log_p + lp


def _log(p: float) -> float:
    """log p, and -inf for p = 0: a choice the probabilities never make."""
    return math.log(p) if p > 0 else -math.inf


def _probabilities(relative, adjective, transitive) -> tuple[float, float, float]:
    """The three probabilities of `sentence`, each checked to be a real number in [0, 1]."""
    return tuple(probability_in(p, name) for p, name in (
        (relative, "relative"), (adjective, "adjective"), (transitive, "transitive")))


def _pick(rng: np.random.Generator, words) -> str:
    return words[rng.integers(len(words))]


def _phrase(rng, plural: int, adjective: float) -> list[str]:
    words = [_pick(rng, WORDS["det"][plural])]
    if rng.random() < adjective:
        words.append(_pick(rng, ADJECTIVES))
    return words + [_pick(rng, WORDS["noun"][plural])]


def _verbs(rng, plural: int, adjective: float, transitive: float) -> list[str]:
    if rng.random() < transitive:
        return [_pick(rng, WORDS["transitive"][plural]),
                *_phrase(rng, int(rng.integers(2)), adjective)]
    return [_pick(rng, WORDS["intransitive"][plural])]


def sentence(rng, relative: float = 0.4, adjective: float = 0.3,
             transitive: float = 0.6) -> str:
    """One random sentence of the language (chapter 15).

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Every choice is uniform except the three probabilities below: singular
    or plural subject, which word of a class, and the object's number.

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    relative : float, default 0.4
        Probability that the subject has a relative clause (``that ...``).
    adjective : float, default 0.3
        Probability that a noun has an adjective.
    transitive : float, default 0.6
        Probability that a verb is transitive and takes an object.

    Returns
    -------
    str
        Words separated by single spaces, ending in ``" ."``.
    """
    rng = generator(rng)
    relative, adjective, transitive = _probabilities(relative, adjective, transitive)
    plural = int(rng.integers(2))
    words = _phrase(rng, plural, adjective)
    if rng.random() < relative:
        words += [THAT, *_verbs(rng, plural, adjective, transitive)]
    return " ".join(words + _verbs(rng, plural, adjective, transitive) + [END])


def corpus(rng, n_sentences: int, **probabilities) -> list[str]:
    """n_sentences random sentences (chapter 15's training and held-out text).

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_sentences : int
    **probabilities
        ``relative``, ``adjective``, ``transitive``: as in `sentence`.

    Returns
    -------
    list of str, length n_sentences
    """
    rng = generator(rng)
    return [sentence(rng, **probabilities)
            for _ in range(positive_int(n_sentences, "n_sentences"))]


def encode(text: str) -> list[int]:
    """Token ids of a sentence or prefix: BOS, then one id per word.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    text : str
        Words of `VOCAB` separated by spaces (it may be empty).

    Returns
    -------
    list of int
        ``[1, ...]``, ids into `VOCAB`.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    unknown = [w for w in text.split() if w not in _ID or w in (PAD, BOS)]
    if unknown:
        raise ValueError(f"text must use the words of VOCAB; got unknown word(s) {unknown} "
                         f"in {text!r}")
    return [_ID[BOS]] + [_ID[w] for w in text.split()]


def decode(ids) -> str | list[str]:
    """The words of token ids, up to and including the first END; PAD and BOS dropped.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    ids : array_like of int, shape (n,) or (batch, n)
        Ids into `VOCAB`, of any integer dtype (a list, a numpy array or a
        torch tensor). A batch, such as what `attnbook.lm.generate`
        returns, is decoded row by row; its rows may differ in length when
        it is a list of lists.

    Returns
    -------
    str, or list of str of length batch
        Words separated by single spaces (a sample without END stops where
        the ids stop, and is not grammatical): one string for ids of shape
        (n,), one per row for a batch, so ``decode(generate(...))`` gives
        a list of sentences.

    Raises
    ------
    TypeError
        If `ids` is not integers (bools, floats and strings are refused).
    ValueError
        If an id lies outside [0, len(VOCAB)), or `ids` has more than two axes.
    """
    if isinstance(ids, (list, tuple)) and ids and \
            any(isinstance(r, (list, tuple)) or getattr(r, "ndim", 0) for r in ids):
        if not all(isinstance(r, (list, tuple)) or getattr(r, "ndim", 0) == 1 for r in ids):
            raise TypeError(f"ids must be ids, shape (n,), or rows of ids, shape (batch, "
                            f"n); got a list that mixes ids and rows: {ids!r}")
        return [_decode_row(as_ids(r, f"ids[{i}]", len(VOCAB), ndim=(1,), layout="(n,)"))
                for i, r in enumerate(ids)]                  # rows of different lengths
    a = as_ids(ids, "ids", len(VOCAB), what="len(VOCAB)", ndim=(1, 2),
               layout="(n,) or (batch, n)")
    return _decode_row(a) if a.ndim == 1 else [_decode_row(row) for row in a]


def _decode_row(ids: np.ndarray) -> str:
    words = []
    for i in ids.tolist():                                     # ids: (n,), checked
        if VOCAB[i] in (PAD, BOS):
            continue
        words.append(VOCAB[i])
        if VOCAB[i] == END:
            break
    return " ".join(words)


def attractor_prefixes(rng, n_sentences: int) -> tuple[list[str], np.ndarray]:
    """Prefixes that stop before the main verb, with a noun of the other number between.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Each prefix is a subject with a relative clause whose object has the
    other number, e.g. ``"the cat that chases the dogs"``: the next word is
    the main verb, which must agree with ``cat``, not with the nearer
    ``dogs`` (an *attractor*).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_sentences : int

    Returns
    -------
    prefixes : list of str, length n_sentences
    plural : ndarray of bool, shape (n_sentences,)
        Whether the subject, and so the main verb, is plural.
    """
    rng = generator(rng)
    prefixes, plural = [], []
    for _ in range(positive_int(n_sentences, "n_sentences")):
        p = int(rng.integers(2))
        words = [*_phrase(rng, p, 0.3), THAT, _pick(rng, WORDS["transitive"][p]),
                 *_phrase(rng, 1 - p, 0.3)]
        prefixes.append(" ".join(words))
        plural.append(bool(p))
    return prefixes, np.array(plural)


def verb_ids(plural: bool) -> list[int]:
    """Ids of the singular (plural=False) or plural verbs, transitive and intransitive.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    plural : bool
        True or False (a numpy bool too); anything else, such as ``"no"``,
        ``None`` or ``1``, is a TypeError.

    Returns
    -------
    list of int
    """
    p = int(flag(plural, "plural"))
    return [_ID[w] for w in WORDS["intransitive"][p] + WORDS["transitive"][p]]
