"""Non-rigid distortions: elastic, grid and optical (lens) distortion."""

OPS = ()
