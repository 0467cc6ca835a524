from lathe.ui.cli import main

main()
