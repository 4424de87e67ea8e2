"""`python -m qex` is the same program as the `qex` console script."""

from qex.cli.main import program

if __name__ == "__main__":
    program()
