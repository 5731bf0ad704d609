"""The LoadGen spine: typed settings, context-managed SUT/QSL handles, a test run, parsed results."""
