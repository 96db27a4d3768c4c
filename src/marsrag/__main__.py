"""``python -m marsrag``: the same CLI as the ``marsrag`` script."""

from marsrag.cli import main

if __name__ == "__main__":
    main()
