"""Question answering over a KG index: one QA system per mode, built in one place.

- :mod:`hoprag.qa.system`: the :class:`~hoprag.qa.system.QASystem` protocol every mode implements;
- :mod:`hoprag.qa.config`: the typed config (index, retriever, LLM, mode, planner settings);
- :mod:`hoprag.qa.builder`: the only place a planner or a single-shot pipeline is constructed
  (``hoprag ask``, the Serve QA deployment and the evaluation workers all call it);
- :mod:`hoprag.qa.retrieve`: single-shot GLM-RAG (``retrieve`` mode);
- :mod:`hoprag.qa.no_context`: the LLM alone (an evaluation baseline).

The ``plan`` mode is the PAI-2 planner, :class:`hoprag.planner.planner.Planner`.
"""
