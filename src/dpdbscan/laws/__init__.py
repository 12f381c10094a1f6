"""The noise laws and privacy conversions: public mathematics, no sampling."""
