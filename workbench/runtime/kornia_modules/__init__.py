"""Kornia augmentation modules that `kornia.augmentation` lacks, written for the workbench.

One file per family. Ops whose `KorniaLowering` has `local=True` name a class of one of them. The Kornia exporter
copies that class, and the top-level functions and classes it uses, into the exported file
(see LOCAL_MODULES in codegen/kornia.py), so the preview and the export run the same code. Each class
follows Kornia's contract: random values in `generate_parameters` (drawn with torch's
generator on the CPU, see the exported `place`), none in `apply_transform`, and the batch
first in every sampled tensor (the workbench reports them per sample).

Their imports come along into the export with them (codegen/source_copy.py), so they import
at top level, and names are unique across the files. Each class takes `RecordsArguments`
(arguments.py) as a base: it keeps what it was built with, which `Chain.from_kornia` reads back.
"""
