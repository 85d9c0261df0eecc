"""OpenIE and NER: prompts (both styles, versioned) and the defensive parsers for their outputs."""
