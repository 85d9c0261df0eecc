"""The KG index artifact: on-disk layout, atomic snapshots, and the loader later stages use."""

from hoprag.kg.index import KGIndex
from hoprag.kg.tables import KGTables

__all__ = ["KGIndex", "KGTables"]
