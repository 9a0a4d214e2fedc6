"""A tiny program for the demo: the agent reads it, searches it and runs it."""


def main() -> None:
    # TODO: greet by name
    print("Hello from the demo workspace")


if __name__ == "__main__":
    main()
