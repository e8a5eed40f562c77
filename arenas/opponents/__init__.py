"""Built-in programmatic opponents (random, MCTS, CFR, MAGE scripted styles); registered by ``builtin_plugin``."""
