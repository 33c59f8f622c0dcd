"""Weather ops: rain, fog, sun flare, shadow."""

OPS = ()
