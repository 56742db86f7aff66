"""`jaxeval report` and `jaxeval run --reference`: results files read back, drawn as tables, HTML
and plots, and compared sample by sample (paired bootstrap)."""
