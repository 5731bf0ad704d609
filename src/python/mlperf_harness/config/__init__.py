"""Typed settings: the table of fields, config classes per benchmark, scenario and system, a registry."""
