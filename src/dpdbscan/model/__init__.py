"""The released span model: the record, predict, its file format and GeoJSON."""
