"""Question → KG entity linking, one function for index time and query time.

:mod:`hoprag.linking.linker` (the linkers, :class:`~hoprag.linking.linker.QuestionLinker`) and
:mod:`hoprag.linking.config` (its settings).
"""
