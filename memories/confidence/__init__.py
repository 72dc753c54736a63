"""Confidence: feedback, outcomes and usage moving a memory's Beta confidence; the daily rollup and decay."""
