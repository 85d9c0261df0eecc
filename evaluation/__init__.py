"""evaluation stage (see ../shared/design/ARCHITECTURE.md); built by a later issue."""
