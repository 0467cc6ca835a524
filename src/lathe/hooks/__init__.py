"""User and plugin hooks at agent events: config-defined commands and Python plugins."""
