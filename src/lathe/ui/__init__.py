"""The faces: command line, headless printers, the interactive terminal."""
