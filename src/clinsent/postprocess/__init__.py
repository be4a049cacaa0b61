"""Post-processing of sentence embeddings fitted on the evaluation sentences: whitening, BERT-flow."""
