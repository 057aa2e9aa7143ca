"""Input checks for attnbook.nn: the rules and wording of attnbook._checks, for tensors.

Kept apart from _checks so that `import attnbook` stays torch-free.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

from ._checks import as_ids, require_finite


def float_tensor(x, name: str, min_ndim: int, layout: str) -> torch.Tensor:
    """`x` if it is a floating-point tensor with >= min_ndim axes and no NaN or inf."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of floats, got {type(x).__name__}; "
                        f"convert it with torch.as_tensor({name})")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must hold floating-point numbers, got dtype {x.dtype}; "
                        f"use {name}.double() or {name}.float()")
    if x.dim() < min_ndim:
        raise ValueError(f"{name} must have shape {layout}; got {x.dim()} dimension(s), "
                         f"shape {tuple(x.shape)}")
    require_finite_tensor(x, name)
    return x


def token_ids(t, name: str, vocab: int, layout: str = "(batch, n)", ndim: int = 2,
              max_len: int | None = None) -> torch.Tensor:
    """`t` if it is a tensor of integer token ids with `ndim` axes, each id in
    [0, vocab), and, with `max_len`, 1 <= n <= max_len tokens on its last axis."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor of integer token ids, got "
                        f"{type(t).__name__}")
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer ids (int64), got dtype {t.dtype}")
    if t.dim() != ndim or (max_len is not None and not 1 <= t.shape[-1] <= max_len):
        limit = "" if max_len is None else f" with 1 <= n <= max_len = {max_len}"
        raise ValueError(f"{name} must have shape {layout}{limit}; got {tuple(t.shape)}")
    if t.numel():
        low, high = id_range(t)
        if low < 0 or high >= vocab:
            raise ValueError(f"{name} must hold ids in [0, vocab) = [0, {vocab}); got ids "
                             f"from {low} to {high}")
    return t


def id_range(t: torch.Tensor) -> tuple[int, int]:
    """(smallest, largest) id of a non-empty integer tensor as Python ints; torch
    has no min or max for uint16, uint32 and uint64, so those go through numpy."""
    if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
        a = t.detach().cpu().numpy()
        return int(a.min()), int(a.max())
    return int(t.min()), int(t.max())


def require_finite_tensor(x: torch.Tensor, name: str, allow_neg_inf: bool = False) -> None:
    """attnbook._checks.require_finite for a tensor (it converts only on failure).
    A tensor on the meta device has shapes but no values, and passes."""
    if not x.is_meta and not torch.isfinite(x).all():
        require_finite(x.detach().cpu().double().numpy(), name, allow_neg_inf)


def require_same_dtype(reference: torch.Tensor, ref_name: str, **tensors) -> None:
    """Raise TypeError naming the first of `tensors` whose dtype differs from reference's."""
    for name, x in tensors.items():
        if x.dtype != reference.dtype:
            raise TypeError(f"{name} must have the dtype of {ref_name}, {reference.dtype}; got "
                            f"{x.dtype}. Convert with {name}.to({reference.dtype})"
                            + (", or convert the module with .double() / .float()"
                               if "parameters" in ref_name else ""))


def as_index_tensor(x, name: str, device) -> torch.Tensor:
    """A mask or valid_lens as a tensor; numpy arrays and lists are accepted."""
    if isinstance(x, torch.Tensor):
        return x.to(device)
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise TypeError(f"{name} could not be read as an array ({err})") from None
    if a.dtype == object or a.dtype.kind in "USV":
        raise TypeError(f"{name} must be a tensor or array of numbers, got dtype {a.dtype}")
    return torch.as_tensor(a, device=device)


def allowed_keys(scores: torch.Tensor, mask, valid_lens) -> torch.Tensor:
    """Boolean (..., n_q, n_k): True where a key may be attended."""
    shape = tuple(scores.shape)
    allowed = torch.ones(shape, dtype=torch.bool, device=scores.device)
    if mask is not None:
        m = as_index_tensor(mask, "mask", scores.device)
        if m.dtype != torch.bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {m.dtype}; "
                            f"for 0/1 values use mask.bool(), and pass additive score "
                            f"offsets as scores instead")
        try:
            fits = torch.broadcast_shapes(tuple(m.shape), shape) == shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"mask must broadcast to the scores' shape {shape}; got shape "
                             f"{tuple(m.shape)}")
        allowed = allowed & m
    if valid_lens is not None:
        lens = as_index_tensor(valid_lens, "valid_lens", scores.device)
        allowed = allowed & valid_lens_to_mask(lens, scores.shape)
    return allowed


def require_finite_scores(scores: torch.Tensor, allowed: torch.Tensor, what: str) -> None:
    """Scores the mask allows must be finite: an overflow must not pose as a masked row."""
    if scores.is_meta:
        return                                  # shapes only: nothing to check
    bad = ~torch.isfinite(scores) & allowed
    if bad.any():
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"the scores overflow {scores.dtype}: score {where} (query row "
                         f"{where[-2] if len(where) > 1 else 0}, key {where[-1]}) of the "
                         f"scores with shape {tuple(scores.shape)} is {scores[where].item()}; "
                         f"{what}")


def probability(p, name: str = "dropout") -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


def valid_lens_to_mask(valid_lens: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Boolean mask (..., n_q, n_k) from lengths of shape (...) or (..., n_q)."""
    n_k = shape[-1]
    if valid_lens.dtype.is_floating_point or valid_lens.dtype.is_complex \
            or valid_lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integers, got dtype {valid_lens.dtype}")
    if valid_lens.dtype in (torch.uint16, torch.uint32, torch.uint64):   # torch has no min
        wide = valid_lens.cpu().numpy()                                  # or max for these
        if wide.size and wide.max() > n_k:
            raise ValueError(f"valid_lens must lie in [0, n_k] = [0, {n_k}]; got values up "
                             f"to {int(wide.max())}")
        valid_lens = torch.from_numpy(wide.astype(np.int64)).to(valid_lens.device)
    if tuple(valid_lens.shape) == tuple(shape[:-1]):
        lens = valid_lens[..., None]
    elif len(shape) >= 2 and tuple(valid_lens.shape) == tuple(shape[:-2]):
        lens = valid_lens[..., None, None]
    else:
        raise ValueError(f"valid_lens must have shape {tuple(shape[:-2])} (one per row of "
                         f"the batch) or {tuple(shape[:-1])} (one per query) for scores of "
                         f"shape {tuple(shape)}; got shape {tuple(valid_lens.shape)}")
    if valid_lens.numel() and (valid_lens.min() < 0 or valid_lens.max() > n_k):
        raise ValueError(f"valid_lens must lie in [0, n_k] = [0, {n_k}]; got values from "
                         f"{int(valid_lens.min())} to {int(valid_lens.max())}")
    return torch.arange(n_k, device=valid_lens.device) < lens


def scores_tensor(scores) -> torch.Tensor:
    if not isinstance(scores, torch.Tensor):
        raise TypeError(f"scores must be a torch.Tensor of floats, got "
                        f"{type(scores).__name__}; convert it with torch.as_tensor(scores)")
    if not scores.dtype.is_floating_point:
        raise TypeError(f"scores must hold floating-point numbers, got dtype {scores.dtype}")
    if scores.dim() < 1:
        raise ValueError("scores must have shape (..., n_k); got 0 dimension(s), shape ()")
    require_finite_tensor(scores, "scores", allow_neg_inf=True)
    return scores


def check_attention_inputs(queries, keys, values):
    """Check queries (..., n_q, d), keys (..., n_k, d'), values (..., n_k, d_v)."""
    queries = float_tensor(queries, "queries", 2, "(..., n_q, d_q)")
    keys = float_tensor(keys, "keys", 2, "(..., n_k, d_k)")
    values = float_tensor(values, "values", 2, "(..., n_k, d_v)")
    require_same_dtype(queries, "queries", keys=keys, values=values)
    if keys.shape[-2] == 0:
        raise ValueError(f"there must be at least one key; got keys of shape "
                         f"{tuple(keys.shape)} (n_k = 0)")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"values must have one row per key: expected (..., {keys.shape[-2]}, "
                         f"d_v) to match keys {tuple(keys.shape)}; got values "
                         f"{tuple(values.shape)}")
    try:
        torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the batch dimensions of queries {tuple(queries.shape[:-2])}, keys "
                         f"{tuple(keys.shape[:-2])} and values {tuple(values.shape[:-2])} do "
                         f"not broadcast together") from None
    return queries, keys, values


def check_dot_product_inputs(queries, keys, values):
    queries, keys, values = check_attention_inputs(queries, keys, values)
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries and keys must share d_k: expected queries (..., n_q, "
                         f"{keys.shape[-1]}) to match keys {tuple(keys.shape)}; got queries "
                         f"{tuple(queries.shape)}")
    if keys.shape[-1] == 0:
        raise ValueError(f"d_k must be at least 1; got keys of shape {tuple(keys.shape)}")



def widened(x: torch.Tensor) -> torch.Tensor:
    """float16 and bfloat16 as float64 (torch's own reductions use float32): a sum
    of 70 000 float16 ones overflows, and bfloat16 keeps 8 bits, so the sums of
    the softmax and of weights @ values are done wide. Other dtypes as they are."""
    return x.double() if x.dtype in (torch.float16, torch.bfloat16) else x


def require_no_underflow(weights: torch.Tensor, allowed: torch.Tensor, dtype) -> None:
    """A row with an allowed key must not round to all zeros in `dtype` (float16 holds
    no weight below 6e-8, so 1/n_k vanishes for n_k > 3e7): that is the masked answer."""
    if weights.is_meta:
        return
    lost = (weights.to(dtype) == 0).all(-1) & allowed.any(-1)
    if lost.any():
        raise ValueError(f"the weights underflow {dtype}: with n_k = {weights.shape[-1]} "
                         f"keys every weight of query row {tuple(torch.nonzero(lost)[0].tolist())}"
                         f" rounds to 0; use float32")


def check_cache_append(cache_k, k, v) -> None:
    """k and v (batch, n_heads, n_new, d_head), alike, and matching the cache's cache_k."""
    k = float_tensor(k, "k", 4, "(batch, n_heads, n_new, d_head)")
    v = float_tensor(v, "v", 4, "(batch, n_heads, n_new, d_head)")
    if k.dim() != 4 or v.shape != k.shape:
        raise ValueError(f"k and v must have the same shape (batch, n_heads, n_new, d_head); "
                         f"got k {tuple(k.shape)} and v {tuple(v.shape)}")
    require_same_dtype(k, "k", v=v)
    if cache_k is not None:
        if k.shape[:2] != cache_k.shape[:2] or k.shape[-1] != cache_k.shape[-1]:
            raise ValueError(f"k must have shape (batch, n_heads, n_new, d_head) = "
                             f"({cache_k.shape[0]}, {cache_k.shape[1]}, n_new, "
                             f"{cache_k.shape[-1]}) to join the cache; got {tuple(k.shape)}")
        require_same_dtype(cache_k, "the cached keys", k=k)


def require_finite_result(x: torch.Tensor, what: str) -> None:
    """Raise ValueError if an intermediate of a module overflowed to inf or NaN."""
    if not x.is_meta and not torch.isfinite(x).all():
        raise ValueError(f"{what} overflows {x.dtype}: it holds inf or NaN, though the "
                         f"input was finite; rescale the input, or use float64")


def row_tensors(arrays, name: str) -> tuple[torch.Tensor, ...]:
    """A non-empty tuple or list of arrays, each read as a tensor with at least one row."""
    if not isinstance(arrays, (tuple, list)) or not arrays:
        raise TypeError(f"{name} must be a non-empty tuple of arrays, got {type(arrays).__name__}")
    out = []
    for i, a in enumerate(arrays):
        if not isinstance(a, torch.Tensor):
            a = np.asarray(a) if not isinstance(a, np.ndarray) else a
            if a.dtype.kind not in "biuf":
                raise TypeError(f"{name}[{i}] must be an array of numbers (integer ids), got "
                                f"dtype {a.dtype}")
            a = torch.as_tensor(np.ascontiguousarray(a))
        if a.dim() == 0 or a.shape[0] == 0:
            raise ValueError(f"{name}[{i}] must hold at least one row (one per sequence); got "
                             f"shape {tuple(a.shape)}")
        out.append(a)
    return tuple(out)


def check_target(model, xs: tuple[torch.Tensor, ...], target, run: bool = True) -> torch.Tensor:
    """target as an int64 tensor of class ids with the shape of model(*xs)'s logits minus
    their last axis; with run=True one row is sent through the model to learn that shape."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    (y,) = row_tensors((target,), "target")
    if y.dtype.is_floating_point or y.dtype.is_complex or y.dtype == torch.bool:
        raise TypeError(f"target must hold integer class ids (int64), got dtype {y.dtype}")
    if y.shape[0] != xs[0].shape[0]:
        raise ValueError(f"target must have one row per sequence like inputs; got target "
                         f"{tuple(y.shape)} and inputs {tuple(xs[0].shape)}")
    if run:
        was = model.training
        model.eval()
        with torch.no_grad():
            logits = model(*(x[:1] for x in xs))[0]             # (1, ..., n_classes)
        model.train(was)
        expected = (y.shape[0],) + tuple(logits.shape[1:-1])
        if tuple(y.shape) != expected:
            raise ValueError(f"target must have shape {expected} (the logits' shape minus "
                             f"the last axis); got {tuple(y.shape)}")
        low, high = id_range(y)
        if low < 0 or high >= logits.shape[-1]:
            raise ValueError(f"target must hold class ids in [0, {logits.shape[-1] - 1}] "
                             f"(one per logit); got values from {low} to {high}")
    return y.long()


def id_tensor(x, name: str, n: int | None, layout: str = "(batch, n)", ndim: int = 2,
              what: str = "vocab", hint: str = "", shape=None, where=None) -> torch.Tensor:
    """`x` (a tensor, array or nested list of any integer dtype) as an int64 tensor of
    ids in [0, n) with `ndim` axes, `layout`: `attnbook._checks.as_ids` for tensors.
    A float, complex or bool tensor is refused naming its torch dtype."""
    if isinstance(x, torch.Tensor) and (x.dtype.is_floating_point or x.dtype.is_complex
                                        or x.dtype == torch.bool):
        raise TypeError(f"{name} must hold integer ids, got dtype {x.dtype}")
    where = where.cpu().numpy() if isinstance(where, torch.Tensor) else where
    a = as_ids(x, name, n, what=what, hint=hint, ndim=(ndim,), layout=layout, shape=shape,
               where=where)
    return torch.from_numpy(np.ascontiguousarray(a))
