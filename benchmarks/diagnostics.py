"""(placeholder: being written for its issue)"""


def add_arguments(parser) -> None:
    """Flags of this feature (an argument group); forwarded to children unless listed in cli.PARENT_ONLY."""
