"""Importers: an existing Albumentations, Kornia or torchvision pipeline becomes a chain
(`Chain.from_albumentations`, `from_kornia`, `from_torchvision`).

`walker` is the one walk over a pipeline they all make; each library's module says how its
containers and transforms read (`albumentations`, `kornia`, `torchvision`); `report` records what
could not be mapped; `coverage` measures how much of a pipeline an import carries over.
"""
