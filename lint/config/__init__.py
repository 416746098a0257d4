"""Settings: options, configuration files, path patterns, gitignore and rule codes.  Above the core and
below the analysis."""
