"""The book's training machinery: Adam written out, and one thread.

Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13), and used by
the training of chapters 13, 15 and 16 (`attnbook.learn`, `attnbook.lm`,
`attnbook.induction`).
"""
from __future__ import annotations

import contextlib
import math

import torch

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
    Unlike torch.optim, its first use does not import torch's compiler (seconds).

    Parameters
    ----------
    params : list of torch.nn.Parameter
        ``step()`` moves each one that has a gradient.
    lr : float
    betas : tuple of float, default (0.9, 0.999)
    eps : float, default 1e-8
    """

    def __init__(self, params: list, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params, self.lr, self.betas, self.eps, self.t = params, lr, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in params]   # running mean of the gradient
        self.v = [torch.zeros_like(p) for p in params]   # running mean of its square

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
        """
        for p in self.params:
            p.grad = None
        loss.backward()
        self.step()
        return loss.item()

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        b1, b2 = self.betas
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            denom = (v.sqrt() / math.sqrt(1 - b2 ** self.t)).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / (1 - b1 ** self.t))
