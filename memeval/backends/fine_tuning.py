"""What every fine-tune of a bundled model does the same way: one update of its weights, and the
weights kept afterwards (the fit cache holds them, in half precision: half the bytes, and the
vectors or probabilities they give move in the fourth digit)."""

from __future__ import annotations

from typing import Any


def update(model: Any, loss: Any, optimiser: Any, schedule: Any) -> None:
    """Back-propagate `loss`, clip the gradients at norm 1, step the optimiser and the learning
    rate, and clear the gradients for the next batch."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimiser.step()
    schedule.step()
    optimiser.zero_grad()


def half_weights(model: Any) -> dict[str, Any]:
    """The trained model's weights in half precision, for evaluation from here on."""
    model.eval()
    return {name: tensor.detach().half() for name, tensor in model.state_dict().items()}
