"""Default arguments import: for every op whose Albumentations lowering has `from_transform`, the
Albumentations class it reads (its `transform` and its `also_imports`), built with its default
arguments, becomes one step of that op through `Chain.from_albumentations`. The classes that cannot
are listed below with the reason; each must still be refused with a reason naming the setting."""
import inspect
import os
import warnings

import pytest

import workbench as wb
from workbench.ops import REGISTRY

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402

# Albumentations classes whose default arguments no op expresses, and a phrase of the reason the
# import gives (it must name the setting).
CANNOT = {
    # A.AutoContrast's default method='cdf' stretches by the histogram's CDF; the AutoContrast op is
    # PIL's per-channel min-max stretch (method='pil').
    "AutoContrast": "method='cdf'",
    # A.GridDropout's default sizes its grid from each image (neither unit_size_range nor
    # holes_number_xy set); GridMask takes a tile in pixels.
    "GridDropout": "GridMask takes a tile in pixels",
}


def _classes() -> dict[str, list[str]]:
    """Albumentations class name -> the ops whose lowering reads it."""
    out: dict[str, list[str]] = {}
    for name, spec in REGISTRY.items():
        low = getattr(spec, "albumentations", None)
        if low is None or low.from_transform is None:
            continue
        for cls in (low.transform, *low.also_imports):
            out.setdefault(cls, []).append(name)
    return out


def _default_instance(cls: str):
    """(instance, None), or (None, (id part, reason)) when the class needs constructor arguments."""
    klass = getattr(A, cls)
    needed = [p.name for p in inspect.signature(klass.__init__).parameters.values()
              if p.name != "self" and p.default is inspect.Parameter.empty
              and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if needed:
        return None, ("needs-" + "-".join(needed), f"its constructor requires {', '.join(needed)}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return klass(), None
    except Exception as exc:  # noqa: BLE001 - the schema's own refusal of the defaults
        # e.g. LongestMaxSize: "Either max_size or max_size_hw must be specified".
        return None, ("needs-arguments", f"its defaults are refused: {' '.join(str(exc).split())}")


def _cases():
    cases = []
    for cls, ops in sorted(_classes().items()):
        instance, why = _default_instance(cls)
        if why is not None:
            cases.append(pytest.param(cls, ops, id=f"{cls}-skipped-{why[0]}",
                                      marks=pytest.mark.skip(reason=f"A.{cls}(): {why[1]}")))
        else:
            cases.append(pytest.param(cls, ops, id=cls))
    return cases


@pytest.mark.parametrize("cls,ops", _cases())
def test_albumentations_default_arguments_import(cls, ops):
    transform, _ = _default_instance(cls)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        chain = wb.Chain.from_albumentations(A.Compose([transform]))
    if cls in CANNOT:
        assert chain.steps == [], f"A.{cls}() imports now: remove it from CANNOT"
        assert len(chain.unmapped) == 1 and CANNOT[cls] in chain.unmapped[0].reason, chain.unmapped
        return
    assert chain.unmapped == [], f"A.{cls}() with default arguments is left out: {chain.unmapped[0].reason}"
    assert len(chain.steps) == 1 and chain.steps[0].op in ops, [s.op for s in chain.steps]
    assert chain.steps[0].p == pytest.approx(float(transform.p))
    # The imported step is a valid step of its op (validated again from its own dict).
    assert wb.Chain.from_dict(chain.to_dict()).to_dict() == chain.to_dict()


def test_the_allow_list_names_only_classes_that_are_read():
    assert set(CANNOT) <= set(_classes())
