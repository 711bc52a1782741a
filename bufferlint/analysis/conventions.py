"""Names programs give by convention, read the same way by every analysis that needs them."""

from __future__ import annotations

# Objects that hold a program's settings (`self.config.n_heads`, `args.device`): numbers and
# flags, never a module's tensors.
SETTINGS_OBJECTS = frozenset("args opt opts option options config cfg conf configs hparams hps settings".split())
