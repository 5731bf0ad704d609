"""The command line every benchmark target shares."""
