"""Learning: the run loop behind ``arena train``, turning trials into samples, credit, the policy update (losses, log-
probs, the trainer), checkpoints, distributed training, SFT and trackers.
"""
