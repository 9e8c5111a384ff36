"""The `forescale` command: a thin dispatcher that imports each subcommand lazily."""
