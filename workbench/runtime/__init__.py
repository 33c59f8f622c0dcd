"""Code that runs inside the workbench and, copied verbatim, inside every exported file.

`common` holds what every export embeds (decoding, the torchrun context, seed derivation,
--save's records, the --bench timer, the command-line flags); `kornia_modules/` holds the
Kornia modules for ops that Kornia lacks. Nothing here imports from the rest of the
workbench: an exported file must run without it.
"""
