"""Weights a model directory marks as *held*: entries that every trainer of this project keeps at their values.

Why: ``tiny``'s copy circuit (``arena.core.models.tiny.circuit``) is a hand-set mechanism, held during the supervised
warm start, that the rest of the network learned to read. Those entries sit where one AdamW step moves the model
most: set free, one step at lr 1e-4 towards an off-format first token took its probability from 0.000 to 0.999;
held, four such steps reach 0.0016 (``arena.core.models.tiny.probe``, docs/models.md). So the build writes the masks
next to the weights (``held_weights.safetensors``: one boolean mask per parameter name, true where the entry is
held) and ``Trainer`` honours them: held entries get no gradient (so they do not count in the clipping norm
either) and are restored after every optimizer step (so weight decay does not move them).
``OptimConfig.hold_marked_weights`` turns this off. Models without the file (SmolLM2, anything from the hub)
train as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch

from arena.core.api.errors import ArenaError

#: The file, in a model directory, with the masks of the held entries.
HELD_FILE = "held_weights.safetensors"
#: The file, in a model directory, with the masks of the model's *readout*: the entries a ``train: readout`` run
#: trains and nothing else (tiny v6's memory readout, the embeddings' ``MEM`` entries; ``OptimConfig.train``).
READOUT_FILE = "readout_weights.safetensors"
#: The files of a model directory that hold masks keyed by parameter names, not weights: a loader that reads every
#: ``*.safetensors`` file of the directory (vLLM does) must leave them out, or a 0/1 mask replaces a weight.
MASK_FILES = (HELD_FILE, READOUT_FILE)


def weight_files(folder: str | Path) -> list[Path]:
    """The safetensors files of a model directory that hold its weights (every one but the masks), sorted."""
    return sorted(f for f in Path(folder).glob("*.safetensors") if f.name not in MASK_FILES)


def save_held(folder: str | Path, masks: Mapping[str, torch.Tensor], file: str = HELD_FILE) -> Path:
    """Write ``masks`` (parameter name → boolean tensor of the parameter's shape) into ``folder``."""
    from safetensors.torch import save_file

    path = Path(folder) / file
    save_file({name: mask.to(torch.uint8).contiguous().cpu() for name, mask in sorted(masks.items())}, str(path))
    return path


def load_held(folder: str | Path, file: str = HELD_FILE) -> dict[str, torch.Tensor] | None:
    """The masks stored in ``folder``, or None when it holds none (or is not a local directory)."""
    from safetensors.torch import load_file

    path = Path(folder) / file
    if not path.is_file():
        return None
    return {name: mask.bool() for name, mask in load_file(str(path)).items()}


def hold_all_but(
    model: torch.nn.Module, readout: Mapping[str, torch.Tensor], held: Mapping[str, torch.Tensor] | None
) -> dict[str, torch.Tensor]:
    """Masks that hold every entry of ``model`` except the ``readout`` entries (which ``held`` may still hold).

    What ``OptimConfig.train: readout`` trains with: the rest of the network stays as built, like a pretrained
    model whose head alone is fine-tuned. Parameters without a readout mask are held whole.
    """
    parameters = dict(model.named_parameters())
    unknown = sorted(set(readout) - set(parameters))
    if unknown:
        raise ArenaError(f"{READOUT_FILE} names parameters the model does not have: {', '.join(unknown[:5])}")
    masks: dict[str, torch.Tensor] = {}
    for name, parameter in parameters.items():
        free = readout.get(name)
        mask = torch.ones_like(parameter, dtype=torch.bool) if free is None else ~free.to(parameter.device)
        if held and name in held:
            mask = mask | held[name].to(parameter.device)
        masks[name] = mask
    return masks


class WeightHold:
    """Keeps the masked entries of ``model``'s parameters (or of the named tensors) where they were when made."""

    def __init__(self, model: torch.nn.Module | Mapping[str, torch.Tensor], masks: Mapping[str, torch.Tensor]) -> None:
        # A mapping names the tensors the optimizer steps (the trainer's float32 master copies, when it has them).
        parameters = dict(model.named_parameters()) if isinstance(model, torch.nn.Module) else dict(model)
        unknown = sorted(set(masks) - set(parameters))
        if unknown:
            raise ArenaError(f"{HELD_FILE} names parameters the model does not have: {', '.join(unknown[:5])}")
        self._held: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        for name, mask in sorted(masks.items()):
            parameter = parameters[name]
            if tuple(mask.shape) != tuple(parameter.shape):
                raise ArenaError(
                    f"{HELD_FILE}: the mask of {name} has shape {tuple(mask.shape)}, "
                    f"the parameter {tuple(parameter.shape)}"
                )
            mask = mask.to(device=parameter.device, dtype=torch.bool)
            self._held.append((parameter, mask, parameter.detach()[mask].clone()))

    @property
    def entries(self) -> int:
        """How many parameter entries are held."""
        return sum(int(mask.sum()) for _, mask, _ in self._held)

    @torch.no_grad()
    def zero_grads(self) -> None:
        """Drop the held entries' gradients (before clipping, so they do not shrink the free entries' steps)."""
        for parameter, mask, _ in self._held:
            if parameter.grad is not None:
                parameter.grad.masked_fill_(self._on(mask, parameter), 0.0)

    @torch.no_grad()
    def restore(self) -> None:
        """Put the held entries back (after the optimizer step: undoes weight decay and momentum drift)."""
        for parameter, mask, values in self._held:
            mask = self._on(mask, parameter)
            parameter.masked_scatter_(mask, values.to(device=parameter.device, dtype=parameter.dtype))

    @staticmethod
    def _on(mask: torch.Tensor, parameter: torch.Tensor) -> torch.Tensor:
        # accelerate (or a .to() call) may have moved the model since the masks were placed.
        return mask if mask.device == parameter.device else mask.to(parameter.device)


class ScaledStep:
    """Scales every optimizer step on the masked entries of the stepped tensors by ``factor`` (0 holds them).

    Why: a readout behind a gain moves the logits that many times faster per AdamW step than any other entry, since
    Adam's step size does not depend on the gradient's scale. tiny v6's memory readout sits behind a 300-fold final-norm
    weight; trained with the whole network at lr 1e-4, MAGE on Kuhn fell from 132 untrained first-episode wins to 120
    (300 trials; 156 with the readout held; docs/results.md, "The memory readout under whole-network training").
    The masked gradients are scaled by ``factor`` before clipping (so they do not dominate the norm and shrink every
    other entry's step; Adam's own step on them is unchanged by it, its moments being per entry), and after the step
    each masked entry is put at ``before + factor * (after - before)``.
    """

    def __init__(
        self, tensors: torch.nn.Module | Mapping[str, torch.Tensor], masks: Mapping[str, torch.Tensor], factor: float
    ) -> None:
        parameters = dict(tensors.named_parameters()) if isinstance(tensors, torch.nn.Module) else dict(tensors)
        unknown = sorted(set(masks) - set(parameters))
        if unknown:
            raise ArenaError(f"{READOUT_FILE} names parameters the model does not have: {', '.join(unknown[:5])}")
        self.factor = factor
        self._scaled = [
            (parameters[name], mask.to(device=parameters[name].device, dtype=torch.bool))
            for name, mask in sorted(masks.items())
        ]
        self._before: list[torch.Tensor] = []

    @property
    def entries(self) -> int:
        """How many parameter entries have their steps scaled."""
        return sum(int(mask.sum()) for _, mask in self._scaled)

    @torch.no_grad()
    def scale_grads(self) -> None:
        """Scale the masked gradients (before clipping)."""
        for parameter, mask in self._scaled:
            if parameter.grad is not None:
                grad = parameter.grad
                grad[WeightHold._on(mask, grad)] *= self.factor

    @torch.no_grad()
    def remember(self) -> None:
        """Record the masked entries just before the optimizer step."""
        self._before = [parameter.detach()[WeightHold._on(mask, parameter)].clone() for parameter, mask in self._scaled]

    @torch.no_grad()
    def scale_step(self) -> None:
        """Shrink the step the optimizer just took on the masked entries to ``factor`` of it."""
        for (parameter, mask), before in zip(self._scaled, self._before, strict=True):
            mask = WeightHold._on(mask, parameter)
            after = parameter.detach()[mask]
            parameter.masked_scatter_(mask, before + self.factor * (after - before))
        self._before = []
