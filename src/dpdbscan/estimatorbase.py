"""scikit-learn's estimator protocol, without importing scikit-learn.

``from dpdbscan import DPDBSCAN`` imported scikit-learn for two base classes:
1.4-1.7 s of CPU (it loads scipy.stats and pandas), six to seven times the
rest of the import (0.24 s). scikit-learn works with an estimator through what it does:
``clone``, ``Pipeline`` and the searches call ``get_params`` and
``set_params`` and the constructor; ``sklearn.utils.get_tags`` calls
``__sklearn_tags__`` (scikit-learn 1.6 and later; before, the estimator's
type is the ``_estimator_type`` attribute); with metadata routing on, a
meta-estimator asks ``get_metadata_routing`` which of ``fit``'s metadata
(``units``) to pass on, as the user set it with ``set_fit_request``.
:class:`EstimatorBase` gives those, and imports scikit-learn (its public
API) only inside the last three, which only scikit-learn or a user of its
routing calls. ``tests/test_sklearn_checks.py`` runs scikit-learn's own
estimator checks on it, and ``tests/test_estimatorbase.py`` clone,
``Pipeline`` and ``GridSearchCV``.

What it leaves out of ``sklearn.base.BaseEstimator``: the estimator is no
instance of it (scikit-learn's checks warn that this "might lead to
unexpected behavior"; they pass), notebooks show the text ``repr`` instead of
scikit-learn's HTML diagram, and a pickle does not record scikit-learn's
version (it holds none of scikit-learn's objects).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Self


class EstimatorBase:
    """The parameters of ``__init__`` as scikit-learn reads and sets them.

    A subclass's ``__init__`` stores each parameter under its own name and
    does nothing else (scikit-learn's convention), so that ``get_params``
    can read them back and ``clone`` can rebuild the estimator from them.
    """

    #: The estimator's type as scikit-learn before 1.6 reads it (``is_clusterer``).
    _estimator_type = "clusterer"

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The names of ``__init__``'s parameters, sorted (scikit-learn's order)."""
        names = []
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must name each parameter (no *args or **kwargs)")
            if p.name != "self":
                names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The estimator's parameters by name; with ``deep``, also those of a
        parameter that has parameters of its own, as ``name__param``."""
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            inner = getattr(value, "get_params", None)
            if deep and callable(inner) and not isinstance(value, type):
                out.update({f"{name}__{k}": v for k, v in inner().items()})
            out[name] = value
        return out

    def set_params(self, **params: Any) -> Self:
        """Set parameters by name (``name__param`` sets a parameter's own
        parameter). An unknown name is refused, naming the valid ones."""
        names = self._get_param_names()
        inner: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, nested, rest = key.partition("__")
            if name not in names:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {names!r}."
                )
            if nested:
                inner.setdefault(name, {})[rest] = value
            else:
                setattr(self, name, value)
        for name, sub in inner.items():
            getattr(self, name).set_params(**sub)
        return self

    def __repr__(self) -> str:
        """The class and the parameters that differ from their defaults."""
        params = inspect.signature(type(self).__init__).parameters.values()
        defaults = {p.name: p.default for p in params if p.name != "self"}
        shown = []
        for name in defaults:
            value = getattr(self, name, None)
            if not _same(value, defaults[name]):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    @classmethod
    def _fit_metadata(cls) -> list[str]:
        """``fit``'s metadata: its keyword-only parameters (``units``, ...)."""
        params = inspect.signature(cls.fit).parameters.values()  # type: ignore[attr-defined]
        return [p.name for p in params if p.kind == p.KEYWORD_ONLY]

    def set_fit_request(self, **requests: bool | str | None) -> Self:
        """Which of ``fit``'s metadata (``units``, ``times``, ``status``) a
        scikit-learn meta-estimator (a ``Pipeline``, ``GridSearchCV``) passes
        on to ``fit``, with scikit-learn's metadata routing on
        (``sklearn.set_config(enable_metadata_routing=True)``): True passes
        it, False does not, None (the default) refuses it if given, a string
        passes the metadata of that name. As scikit-learn's estimators'
        ``set_fit_request``; returns self."""
        import sklearn

        if not sklearn.get_config().get("enable_metadata_routing", False):
            raise RuntimeError(
                "set_fit_request is only available with scikit-learn's metadata routing on: "
                "sklearn.set_config(enable_metadata_routing=True)"
            )
        known = self._fit_metadata()
        unknown = sorted(set(requests) - set(known))
        if unknown:
            raise TypeError(f"set_fit_request got {unknown}, which fit does not take (its metadata: {known})")
        request = self.get_metadata_routing()
        for name, alias in requests.items():
            request.fit.add_request(param=name, alias=alias)
        self._metadata_request = request
        return self

    def get_metadata_routing(self) -> Any:
        """The metadata ``fit`` requests (a scikit-learn ``MetadataRequest``):
        as :meth:`set_fit_request` set them, else none (each refused if given)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = getattr(self, "_metadata_request", None)
        if request is None:
            request = MetadataRequest(owner=type(self).__name__)
            for name in self._fit_metadata():
                request.fit.add_request(param=name, alias=None)
        return copy.deepcopy(request)

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags of a clusterer that takes a 2-D array and
        needs no ``y`` (called by scikit-learn only, which is then imported)."""
        from sklearn.utils import Tags, TargetTags

        return Tags(
            estimator_type="clusterer",
            target_tags=TargetTags(required=False),
            transformer_tags=None,
            regressor_tags=None,
            classifier_tags=None,
        )


def _same(value: Any, default: Any) -> bool:
    """Whether a parameter still has its default (arrays and the like,
    whose ``==`` is not one truth value, count as changed)."""
    if value is default:
        return True
    try:
        return bool(value == default) and type(value) is type(default)
    except (TypeError, ValueError):
        return False


__all__ = ["EstimatorBase"]
