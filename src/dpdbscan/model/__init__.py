"""The released span model: the record (:class:`SpanModel`, with predict) and
the functions over it: its guarantee, description and summary, spans for
other parameters from the same release, its file format and GeoJSON."""

from .codec import load_model, model_from_dict, model_to_dict, save_model, to_json
from .describe import describe, summary
from .geojson import geojson, predict_lonlat, save_geojson
from .guarantee import eps_candidates, guarantee
from .record import SpanModel
from .reparam import finest_eps, with_params

__all__ = [
    "SpanModel",
    "describe",
    "finest_eps",
    "geojson",
    "eps_candidates",
    "guarantee",
    "load_model",
    "model_from_dict",
    "model_to_dict",
    "predict_lonlat",
    "save_geojson",
    "save_model",
    "summary",
    "to_json",
    "with_params",
]
