"""Data generators and shipped sample data (the synthetic multi-hop QA benchmark lives in ``synthetic``)."""
