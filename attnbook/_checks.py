"""Input checks shared by attnbook's functions.

Every public function checks its arguments here before any arithmetic, so a
learner who passes the wrong thing gets an error that names the argument and
shows what was expected and what arrived, instead of a silently wrong number.
"""
from __future__ import annotations

import numbers

import numpy as np


def as_real(x, name: str) -> np.ndarray:
    """Return `x` as a float64 array, or raise TypeError naming `name`.

    bool, signed and unsigned integers and all float widths (torch's
    bfloat16 and float16 too) are accepted and cast to float64 first (so
    uint8 arithmetic can never wrap around). Strings, complex numbers,
    times, objects, None and masked arrays (whose mask would be lost) are
    refused, and so is a longdouble beyond float64's range.
    """
    if x is None:
        raise TypeError(f"{name} must be an array of real numbers, got None")
    x = to_numpy(x, name)
    if isinstance(x, np.ma.MaskedArray) and np.ma.getmaskarray(x).any():
        raise TypeError(f"{name} must be a plain array; got a numpy masked array whose mask "
                        f"would be ignored. Pass the mask as a boolean mask argument "
                        f"(True = may attend) or fill it, e.g. {name}.filled(-np.inf)")
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as err:  # ragged nested lists, for instance
        raise TypeError(f"{name} must be an array of real numbers; "
                        f"numpy could not read it as one ({err})") from None
    if a.dtype.kind in "biuf":
        with np.errstate(over="ignore"):                         # a longdouble: named below
            out = a.astype(np.float64)
        if a.dtype.kind == "f" and a.dtype.itemsize > 8:       # longdouble
            lost = np.isfinite(a) & ~np.isfinite(out)
            if lost.any():
                where = first_index(lost)
                raise ValueError(f"{name} holds {a[where]!s} at index {where} of shape "
                                 f"{a.shape}, finite but beyond float64's range "
                                 f"(about 1.8e308), in which attnbook computes; rescale "
                                 f"{name}")
        return out
    raise TypeError(f"{name} must be an array of real numbers, got dtype "
                    f"{a.dtype} (value {short(a)})")


def to_numpy(x, name: str):
    """A torch tensor as a numpy array (bfloat16 widened to float32); anything else as is."""
    if not (hasattr(x, "detach") and hasattr(x, "numpy")):
        return x
    x = x.detach().cpu()
    if getattr(x, "is_sparse", False):
        x = x.to_dense()
    try:
        return x.numpy()
    except (TypeError, RuntimeError):                # bfloat16 and float8 have no numpy twin
        if x.dtype.is_floating_point:
            return x.float().numpy()
        raise TypeError(f"{name} must be an array of real numbers, got a tensor of dtype "
                        f"{x.dtype}") from None


def first_index(flags: np.ndarray) -> tuple[int, ...]:
    """Where the first True of the boolean array `flags` is (in C order), as a tuple
    of ints: the index an error message shows for the first bad entry."""
    return tuple(int(i) for i in np.argwhere(flags)[0])


def flag(x, name: str) -> bool:
    """Return `x` as a Python bool if it is True or False, else raise TypeError.

    Accepted: Python's bool, numpy's bool_, and a 0-d boolean numpy array or
    torch tensor (what ``mask.any()`` returns). Refused, with a TypeError
    naming `name`: strings ("no" would be truthy), None, and numbers, even 0
    and 1, so that a flag is never read from a value meant for something else.
    """
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    dtype = getattr(x, "dtype", None)
    if getattr(x, "ndim", None) == 0 and (dtype == np.bool_ or str(dtype) == "torch.bool"):
        return bool(x.item())
    raise TypeError(f"{name} must be True or False (a bool), got {type(x).__name__} {x!r}")


def choice(x, name: str, options) -> str:
    """Return `x` if it is one of the strings `options` (a tuple, or a dict of
    option -> what it means); else a TypeError (not a string) or a ValueError
    (another string) that lists them, with their meanings if given."""
    listed = " or ".join(f"{o!r} ({options[o]})" if isinstance(options, dict) else repr(o)
                         for o in options)
    if not isinstance(x, str):
        raise TypeError(f"{name} must be {listed}, got {type(x).__name__} {x!r}")
    if x not in options:
        raise ValueError(f"{name} must be {listed}, got {x!r}")
    return x


#: The two ways to align a causal mask when n_q != n_k (see core.causal_mask).
ALIGNMENTS = ("top-left", "bottom-right")


def require_finite(a: np.ndarray, name: str, allow_neg_inf: bool = False) -> None:
    """Raise ValueError if `a` holds NaN or infinity (or only NaN/+inf)."""
    bad = np.isnan(a) | (a == np.inf)
    if not allow_neg_inf:
        bad |= a == -np.inf
    if bad.any():
        where = first_index(bad)
        what = "NaN or +inf" if allow_neg_inf else "NaN or inf"
        raise ValueError(f"{name} must not contain {what}; found {a[where]} at "
                         f"index {where if a.ndim else '()'} of {name} with shape "
                         f"{a.shape}")


def require_between(a: np.ndarray, name: str, low: float, high: float, what: str) -> None:
    """Raise ValueError naming the first entry of `a` outside [low, high]; `what`
    says what the values are (e.g. "induction scores")."""
    bad = (a < low) | (a > high)
    if bad.any():
        where = first_index(bad)
        raise ValueError(f"{name} must be {what} in [{low:g}, {high:g}]; found {a[where]} at "
                         f"index {where if a.ndim else '()'} of {name} with shape {a.shape}")


def require_ndim(a: np.ndarray, name: str, allowed: tuple[int, ...] | str,
                 layout: str) -> None:
    """Raise ValueError unless `a.ndim` is allowed.

    `allowed` is a tuple of exact dimension counts or ">=k"; `layout` names
    the expected axes, e.g. "(..., n_q, d_k)".
    """
    if isinstance(allowed, str):
        ok = a.ndim >= int(allowed[2:])
    else:
        ok = a.ndim in allowed
    if not ok:
        raise ValueError(f"{name} must have shape {layout}; got {a.ndim} "
                         f"dimension(s), shape {a.shape}")


def _real_scalar(x, name: str, expected: str) -> float:
    """`x` as a float if it is a real number (a 0-d numeric array counts), else a
    TypeError saying `name` must be `expected`."""
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf":
        x = x.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be {expected}, got {type(x).__name__} {x!r}")
    try:
        return float(x)
    except OverflowError:                           # an int beyond float64, e.g. 10**400
        raise ValueError(f"{name} must be {expected} that fits a float64 (at most about "
                         f"1.8e308); got an integer of {len(str(abs(int(x))))} digits") from None


def sequence(x, name: str, of: str) -> list:
    """`x` as a list if it is a sequence (not a string), else a TypeError saying
    `name` must be a sequence `of` what."""
    if isinstance(x, (str, bytes, dict)) or not hasattr(x, "__len__") \
            or not hasattr(x, "__iter__"):
        raise TypeError(f"{name} must be a sequence of {of}, got {type(x).__name__} {x!r}")
    return list(x)


def positive_number(x, name: str) -> float:
    """Return `x` as a float if it is a finite real number > 0, else raise."""
    x = _real_scalar(x, name, "a real number > 0")
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {x}")
    return x


def nonnegative_number(x, name: str) -> float:
    """Return `x` as a float if it is a finite real number >= 0, else raise."""
    x = _real_scalar(x, name, "a real number >= 0")
    if not np.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x}")
    return x


def finite_number(x, name: str) -> float:
    """Return `x` as a float if it is a finite real number (of any sign), else raise."""
    x = _real_scalar(x, name, "a real number")
    if not np.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {x}")
    return x


def probability_in(p, name: str) -> float:
    """Return `p` as a float if it is a real number in [0, 1], else raise naming `name`."""
    p = _real_scalar(p, name, "a probability in [0, 1]")
    if not 0 <= p <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
    return p


def generator(rng, name: str = "rng") -> np.random.Generator:
    """Return `rng` if it is a numpy Generator, else raise TypeError naming `name`."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy Generator, e.g. "
                        f"np.random.default_rng(0); got {type(rng).__name__}")
    return rng


def positive_ints(values, name: str) -> list[int]:
    """Return `values` as a non-empty list of integers >= 1, or raise naming the entry."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") \
            or (isinstance(values, np.ndarray) and values.ndim != 1):
        raise TypeError(f"{name} must be a sequence of positive integers, got "
                        f"{type(values).__name__} {values!r}")
    out = [positive_int(v, f"{name}[{i}]") for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name} must hold at least one value; got none")
    return out


def as_distribution(w, name: str) -> np.ndarray:
    """Return `w` as float64 rows of probabilities along the last axis, or raise.

    Each row must be >= 0 and sum to 1 within rounding (a tolerance that grows
    with the row length and with the precision of the dtype that arrived), or
    be all 0: the weights of a fully masked query.
    """
    bfloat16 = str(getattr(w, "dtype", "")) == "torch.bfloat16"    # eps 2**-7
    w = to_numpy(w, name)
    arrived = getattr(w, "dtype", None)
    a = as_real(w, name)
    require_ndim(a, name, ">=1", "(..., n)")
    require_finite(a, name)
    if a.shape[-1] == 0:
        raise ValueError(f"{name} must have at least one entry along its last axis; "
                         f"got shape {a.shape}")
    if (a < 0).any():
        where = first_index(a < 0)
        raise ValueError(f"{name} must be probabilities (each >= 0); found {a[where]} at "
                         f"index {where} of {name} with shape {a.shape}")
    eps = 2.0 ** -7 if bfloat16 else np.finfo(arrived).eps if arrived is not None and \
        np.issubdtype(arrived, np.floating) else np.finfo(np.float64).eps
    tol = max(1e-9, 8 * eps * np.sqrt(a.shape[-1]))
    totals = a.sum(axis=-1)
    bad = (np.abs(totals - 1) > tol) & (totals != 0)
    if bad.any():
        where = first_index(bad)
        row = f"row {where} of {name} with shape {a.shape}" if a.ndim > 1 else \
            f"{name} of shape {a.shape}"
        raise ValueError(f"each row of {name} must sum to 1 (within {tol:.1g}), or be all 0 "
                         f"for a fully masked query; {row} sums to {float(totals[where])!r}")
    return a


def as_mask(mask, name: str, target_shape: tuple[int, ...]) -> np.ndarray:
    """Return a boolean mask broadcast to `target_shape` (True = may attend)."""
    m = np.asarray(to_numpy(mask, name))
    if m.dtype != np.bool_:
        raise TypeError(f"{name} must be boolean (True = may attend), got dtype "
                        f"{m.dtype}; for 0/1 values use {name}.astype(bool), and "
                        f"pass additive score offsets as scores instead")
    try:
        return np.broadcast_to(m, target_shape)
    except ValueError:
        raise ValueError(f"{name} must broadcast to the scores' shape "
                         f"{target_shape}; got shape {m.shape}") from None


def axis_index(axis, ndim: int, name: str = "axis") -> int:
    """Return `axis` as a non-negative index into `ndim` axes, or raise."""
    _integer(axis, name, "an integer")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with "
                         f"{ndim} dimension(s)")
    return int(axis) % ndim


def _integer(n, name: str, expected: str) -> None:
    """Raise a TypeError saying `name` must be `expected` unless `n` is an integer
    (bool refused; a 0-d integer array counts)."""
    if isinstance(n, np.ndarray) and n.ndim == 0 and n.dtype.kind in "iu":
        n = n.item()
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be {expected}, got {type(n).__name__} {n!r}")


def short(a: np.ndarray) -> str:
    text = np.array2string(a.ravel()[:4], threshold=4)
    return text if a.size <= 4 else text[:-1] + " ...]"


def integer_at_least(n, name: str, minimum: int) -> int:
    """Return `n` as an int if it is an integer >= `minimum` (bool refused), else raise.

    The one integer-count check of attnbook (the torch modules use it too): a
    TypeError for anything that is not an integer, a ValueError for one that is
    too small, each naming `name`.
    """
    expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    _integer(n, name, expected)
    if n < minimum:
        raise ValueError(f"{name} must be {expected}, got {n}")
    return int(n)


def positive_int(n, name: str) -> int:
    """Return `n` as an int if it is an integer >= 1 (bool refused), else raise."""
    return integer_at_least(n, name, 1)


def index_into(index, n: int, name: str = "index", negative: bool = False) -> int:
    """Return `index` if it is an integer in [0, n - 1], else raise naming `name`.

    With ``negative=True``, -n..-1 count from the end, as in Python's lists.
    """
    low = -n if negative else 0
    _integer(index, name, f"an integer in [{low}, {n - 1}]")
    if not low <= index < n:
        raise ValueError(f"{name} must lie in [{low}, {n - 1}] (one of the {n} values), "
                         f"got {index}")
    return int(index) % n


def require_finite_scores(scores: np.ndarray, allowed: np.ndarray | None, what: str) -> None:
    """Raise ValueError if a score the mask allows is not finite (it overflowed).

    A masked score is -inf by design; any other NaN or ±inf came from an
    overflow, and a softmax would silently turn it into a zero row, the answer
    reserved for a fully masked row. `what` says which inputs made the scores.
    """
    bad = ~np.isfinite(scores)
    if allowed is not None:
        bad = bad & allowed                       # allowed may add batch axes
        scores = np.broadcast_to(scores, bad.shape)
    if bad.any():
        where = first_index(bad)
        raise ValueError(f"the scores overflow float64: score {where} (query row "
                         f"{where[-2] if len(where) > 1 else 0}, key {where[-1]}) of the "
                         f"scores with shape {scores.shape} is {scores[where]}; {what}")


def labels_for(labels, name: str, n: int | None, strings: bool = False,
               optional: bool = True) -> None:
    """Raise unless `labels` is a sequence (not a string) of n entries (any length for
    n=None; strings only, with strings=True), or None if optional."""
    if labels is None and optional:
        return
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__") \
            or not hasattr(labels, "__getitem__") \
            or (isinstance(labels, np.ndarray) and labels.ndim != 1):
        raise TypeError(f"{name} must be a sequence of labels, got "
                        f"{type(labels).__name__} {labels!r}")
    if n is not None and len(labels) != n:
        raise ValueError(f"{name} must have one label for each of the {n} entries; got "
                         f"{len(labels)}")
    if strings and not all(isinstance(s, str) for s in labels):
        raise TypeError(f"{name} must hold strings; got {[type(s).__name__ for s in labels]}")


def _holds_bool(x) -> bool:
    """Whether a (nested) list or tuple holds a Python or numpy bool, which numpy
    would silently read as the integer 0 or 1."""
    if isinstance(x, (bool, np.bool_)):
        return True
    return isinstance(x, (list, tuple)) and any(_holds_bool(v) for v in x)


def as_ids(x, name: str, n: int | None = None, what: str = "vocab", hint: str = "",
           ndim: tuple[int, ...] | None = None, layout: str = "",
           shape: tuple[int, ...] | None = None, where=None) -> np.ndarray:
    """Return `x` as an int64 array of ids in [0, n) (any n >= 0 fitting int64 if
    n is None), or raise naming `name`.

    Every integer dtype is accepted (Python ints; numpy and torch int8 to
    uint64); bools, floats, strings and objects are refused with a TypeError
    (a bool inside a list too, which numpy would read as 0 or 1), and an id
    outside the range with a ValueError that shows the first one and its
    index. `what` names n in the message (``[0, vocab) = [0, 10)``); `hint`
    is added to the range error. With `ndim` the array must have one of those
    numbers of axes, with `shape` exactly that shape, `layout` in words (both
    checked before the range). With `where`, a boolean array of that shape,
    only the ids where it is True are range-checked (the others are not
    read). An empty list is an empty array of ids.
    """
    if x is None or isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be integer ids, got {type(x).__name__} {x!r}")
    if _holds_bool(x):
        raise TypeError(f"{name} must be integer ids, got a bool among them ({x!r}); "
                        f"use 0 and 1 if you mean ids")
    x = to_numpy(x, name)
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as err:           # ragged nested lists, for instance
        raise TypeError(f"{name} must be integer ids of one shape; numpy could not read "
                        f"it as an array ({err})") from None
    if a.size == 0 and isinstance(x, (list, tuple)):
        a = a.astype(np.int64)                       # [] reads as float64
    if a.dtype == object and a.size and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
            for v in a.ravel()):
        big = [v for v in a.ravel() if not -2 ** 63 <= v < 2 ** 63]
        if big:
            raise ValueError(f"{name} must hold ids in [0, 2**63) (they are stored as "
                             f"int64); got {big[0]}")
        a = a.astype(np.int64)                       # Python ints that fit int64
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer ids, got dtype {a.dtype} "
                        f"(value {short(a)})")
    if ndim is not None:
        require_ndim(a, name, ndim, layout)
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {layout} = {tuple(shape)}; got {a.shape}")
    high = 2 ** 63 if n is None else n
    bad = (a < 0) | (a >= high)
    if where is not None:
        bad &= np.asarray(where, dtype=bool)
    if bad.any():
        at = first_index(bad)
        valid = "[0, 2**63) (they are stored as int64)" if n is None else \
            f"[0, {what}) = [0, {n})"
        raise ValueError(f"{name} must hold ids in {valid}{hint}; found {a[at]} at index "
                         f"{at} of {name} with shape {a.shape}")
    return a.astype(np.int64, copy=False)
