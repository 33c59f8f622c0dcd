"""Degradation ops: box blur, downscaling, sensor noise."""

OPS = ()
