"""Float32 master weights for a model held in bfloat16 (or float16) that the trainer updates in place.

Why: on a GPU the hf backend loads the policy in bfloat16, and the trainer steps that same model object (the
backend samples from it, so no weights are copied). bfloat16 keeps 8 significant bits: a weight of 0.02 can only
move in steps of about 1e-4, while an AdamW step moves each entry by about ``lr`` (1e-6 to 1e-5 in RL
fine-tuning). Such steps round away. Measured on CPU (``tests/learning/test_master_weights.py``): five updates at
lr 1e-6 changed 0.4% of a bfloat16 toy model's entries and all of them in float32.

The cure is the one of mixed-precision training (Megatron, DeepSpeed's bf16 optimizer): forward and backward run in
the model's own precision; each micro-batch's gradients are added into float32 gradients of float32 copies of
the weights; AdamW steps the copies (so its moments are float32 too); after every step the copies, rounded, are
written back into the model. Small steps then add up in the copies until they show in the model.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

#: Parameter dtypes that get float32 master copies.
LOW_PRECISION = (torch.bfloat16, torch.float16)


def wants_master_weights(model: torch.nn.Module) -> bool:
    """Whether any trainable parameter of ``model`` is held in a low-precision dtype."""
    return any(p.requires_grad and p.dtype in LOW_PRECISION for p in model.parameters())


class MasterWeights:
    """Float32 copies of ``model``'s trainable parameters, on the same devices, for the optimizer to step.

    Make it after the model is placed on its device (and, with several processes, after every rank holds the
    same weights): the copies start from the model's weights as they are then.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self._pairs: list[tuple[str, torch.nn.Parameter, torch.nn.Parameter]] = [
            (name, param, torch.nn.Parameter(param.detach().to(torch.float32).clone()))
            for name, param in model.named_parameters()
            if param.requires_grad
        ]

    def parameters(self) -> list[torch.nn.Parameter]:
        """The float32 copies, in the model's parameter order: what the optimizer steps."""
        return [master for _, _, master in self._pairs]

    def named_parameters(self) -> dict[str, torch.nn.Parameter]:
        """The float32 copies by the model's parameter names."""
        return {name: master for name, _, master in self._pairs}

    @torch.no_grad()
    def accumulate_grads(self) -> None:
        """Add the model's gradients (of one backward) into the copies' float32 gradients and clear the model's.

        Called after every micro-batch's backward, so a minibatch of many micro-batches sums its gradients in
        float32 rather than in the model's precision.
        """
        for _, param, master in self._pairs:
            if param.grad is None:
                continue
            if master.grad is None:
                master.grad = param.grad.to(torch.float32)
            else:
                master.grad.add_(param.grad)
            param.grad = None

    @torch.no_grad()
    def write_to_model(self) -> None:
        """Round the copies into the model's weights (after every optimizer step)."""
        for _, param, master in self._pairs:
            param.copy_(master)

    @torch.no_grad()
    def read_from_model(self) -> None:
        """Start the copies again from the model's weights (when weights were loaded into the model)."""
        for _, param, master in self._pairs:
            master.copy_(param)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The copies by parameter name, for checkpoints: a resumed run keeps the bits the model rounds off."""
        return {name: master.detach() for name, _, master in self._pairs}

    @torch.no_grad()
    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore the copies saved by ``state_dict`` and write them into the model."""
        missing = sorted({name for name, _, _ in self._pairs} - set(state))
        if missing:
            raise KeyError(f"master weights missing from the saved state: {', '.join(missing[:5])}")
        for name, _, master in self._pairs:
            master.copy_(state[name])
        self.write_to_model()
