"""The book's training machinery: Adam written out, and one thread.

Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13), and used by
the training of chapters 13, 15 and 16 (`attnbook.learn`, `attnbook.lm`,
`attnbook.induction`).
"""
from __future__ import annotations

import contextlib
import math

import torch

from ._checks import finite_number, nonnegative_number, positive_number

__all__ = ["Adam", "one_thread"]


def __dir__() -> list[str]:
    return sorted(__all__)


@contextlib.contextmanager
def one_thread():
    """torch on one thread while the block runs, as the book's training does.

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13). One
    thread sums in one order, so a run gives the same bits every time on
    one machine (another machine may round differently: see the chapter).

    Parameters
    ----------
    None

    Returns
    -------
    context manager
        Restores torch's number of threads on leaving.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Adam:
    """Adam (Kingma & Ba 2015): torch.optim.Adam's arithmetic and defaults, written out.

    The optimiser of :doc:`/chapters/13_attention_that_learns` (chapter 13),
    which names it without deriving it; the paper is in the book's references.
    Unlike torch.optim, its first use does not import torch's compiler
    (seconds). It is called as torch's is, ``Adam(model.parameters(), lr)``,
    and checks its settings as torch's does, and a little more.

    Parameters
    ----------
    params : iterable of torch.nn.Parameter, or of dict
        ``step()`` moves each one that has a gradient: a list, or a
        generator such as ``model.parameters()``, of floating-point leaf
        tensors, each once; or torch's parameter groups, dicts with
        ``"params"`` and, optionally, their own ``"lr"``, ``"betas"`` and
        ``"eps"``.
    lr : float, default 1e-3
        The step size, a finite number >= 0.
    betas : tuple of float, default (0.9, 0.999)
        Two numbers in [0, 1): how slowly the running means of the gradient
        and of its square forget.
    eps : float, default 1e-8
        A finite number > 0 added to the denominator (torch allows 0, which
        divides 0 by 0 where a gradient is exactly 0).

    Raises
    ------
    TypeError
        If `params` is a single tensor or a module, holds something other
        than floating-point tensors, or a setting is not a real number.
    ValueError
        If `params` is empty, holds a tensor twice or a non-leaf tensor, or a
        setting lies outside its range (lr NaN, inf or negative, for instance).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        self.lr, self.betas, self.eps = _settings(lr, betas, eps, "")
        self.param_groups = _groups(params, self.lr, self.betas, self.eps)
        self.params = [p for g in self.param_groups for p in g["params"]]
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]   # running mean of the gradient
        self.v = [torch.zeros_like(p) for p in self.params]   # running mean of its square

    def descend(self, loss: torch.Tensor) -> float:
        """One training step: the gradient of `loss`, then `step`.

        Parameters
        ----------
        loss : torch.Tensor, shape ()
            Computed from the parameters; their old gradients are dropped first.

        Returns
        -------
        float
            The loss.

        Raises
        ------
        TypeError
            If `loss` is not a tensor with one element.
        ValueError
            If `loss` is NaN or infinite (the step would make every parameter NaN),
            or does not depend on the parameters.
        """
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 \
                or not loss.dtype.is_floating_point:
            raise TypeError("loss must be a float tensor with one element, shape (), got "
                            + (f"dtype {loss.dtype}, shape {tuple(loss.shape)}"
                               if isinstance(loss, torch.Tensor) else type(loss).__name__))
        if not torch.isfinite(loss.detach()).all():
            raise ValueError(f"loss must be finite, got {loss.item()}: its gradient would "
                             f"turn the parameters into NaN")
        if not loss.requires_grad:
            raise ValueError("loss must be computed from the parameters (it has no "
                             "gradient: requires_grad is False, for instance under "
                             "torch.no_grad() or from detached tensors)")
        for p in self.params:
            p.grad = None
        loss.backward()
        if all(p.grad is None for p in self.params):
            raise ValueError("loss does not depend on any of the optimiser's parameters: "
                             "backward gave none of them a gradient, so nothing would move")
        self.step()
        return loss.item()

    @torch.no_grad()
    def step(self) -> None:
        """Move every parameter that has a gradient by one Adam step.

        Returns
        -------
        None
        """
        self.t += 1
        i = 0
        for group in self.param_groups:
            (b1, b2), lr, eps = group["betas"], group["lr"], group["eps"]
            for p in group["params"]:
                m, v = self.m[i], self.v[i]
                i += 1
                if p.grad is None:
                    continue
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                denom = (v.sqrt() / math.sqrt(1 - b2 ** self.t)).add_(eps)
                p.addcdiv_(m, denom, value=-lr / (1 - b1 ** self.t))


def _settings(lr, betas, eps, where: str) -> tuple[float, tuple[float, float], float]:
    """lr, betas and eps checked as torch.optim.Adam checks them (and finite, eps > 0);
    `where` says which parameter group they come from, for the message."""
    lr = nonnegative_number(lr, f"lr{where}")
    if isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__") or len(betas) != 2:
        raise TypeError(f"betas{where} must be a pair of numbers in [0, 1), such as "
                        f"(0.9, 0.999); got {betas!r}")
    betas = tuple(finite_number(b, f"betas{where}[{i}]") for i, b in enumerate(betas))
    for i, b in enumerate(betas):
        if not 0 <= b < 1:
            raise ValueError(f"betas{where}[{i}] must lie in [0, 1), got {b}")
    eps = positive_number(eps, f"eps{where}")
    return lr, betas, eps


def _groups(params, lr: float, betas, eps: float) -> list[dict]:
    """`params` as torch's parameter groups: dicts of params, lr, betas and eps."""
    if isinstance(params, (torch.Tensor, torch.nn.Module)) or not hasattr(params, "__iter__") \
            or isinstance(params, (str, bytes, dict)):
        hint = "; pass model.parameters()" if isinstance(params, torch.nn.Module) else ""
        raise TypeError(f"params must be an iterable of tensors or of dicts (parameter "
                        f"groups), such as model.parameters(); got {type(params).__name__}"
                        f"{hint}")
    items = list(params)                                     # a generator is read once
    if not items:
        raise ValueError("params must hold at least one parameter; got none (is the model "
                         "empty, or the generator already used?)")
    if all(isinstance(g, dict) for g in items):
        groups = []
        for k, g in enumerate(items):
            unknown = set(g) - {"params", "lr", "betas", "eps"}
            if "params" not in g or unknown:
                raise ValueError(f"params[{k}] must be a parameter group with 'params' and "
                                 f"optionally 'lr', 'betas', 'eps'; got keys {sorted(g)}")
            settings = _settings(g.get("lr", lr), g.get("betas", betas), g.get("eps", eps),
                                 f" of params[{k}]")
            group = g["params"]
            group = [group] if isinstance(group, torch.Tensor) else list(group)
            groups.append({"params": group, **dict(zip(("lr", "betas", "eps"), settings,
                                                        strict=True))})
    elif any(isinstance(g, dict) for g in items):
        raise TypeError("params must hold tensors or parameter groups (dicts), not both")
    else:
        groups = [{"params": items, "lr": lr, "betas": betas, "eps": eps}]
    seen = set()
    for k, group in enumerate(groups):
        for i, p in enumerate(group["params"]):
            name = f"params[{i}]" if len(groups) == 1 else f"params[{k}]['params'][{i}]"
            if not isinstance(p, torch.Tensor) or not p.dtype.is_floating_point:
                raise TypeError(f"{name} must be a floating-point tensor (a parameter), got "
                                + (f"dtype {p.dtype}" if isinstance(p, torch.Tensor)
                                   else type(p).__name__))
            if not p.is_leaf:
                raise ValueError(f"{name} must be a leaf tensor, such as an nn.Parameter; it "
                                 f"was computed from others, so a step cannot move it")
            if id(p) in seen:
                raise ValueError(f"{name} appears twice in params; it would take two steps")
            seen.add(id(p))
    return groups
