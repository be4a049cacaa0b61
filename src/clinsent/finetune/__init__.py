"""The fine-tuned setting (BioSimCSE section 4): a trained bi-encoder, or a cross-encoder from
the base model, fine-tuned on an eval set's training pairs, the epoch picked on a validation
set and scored on a test set, all three read through the task registry."""
