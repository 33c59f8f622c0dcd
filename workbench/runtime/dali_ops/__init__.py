"""DALI functions that the exported step functions call where DALI has no one operator for an op
(the way DALI's own auto_aug defines an augmentation in a few lines of `fn` calls). An op's DALI
lowering (ops/) writes the call; the export copies the functions a chain calls, with what they use
(codegen/dali.py, codegen/source_copy.py). A function marked @do_not_convert holds no `if` on a
node: DALI's autograph calls it as it is; one without the mark branches per sample and is
rewritten. Names are unique across the files.
"""
