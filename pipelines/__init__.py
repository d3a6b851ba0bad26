"""Ready-to-use pipeline configs (YAML), shipped as package data ``daliaug.pipelines``."""
