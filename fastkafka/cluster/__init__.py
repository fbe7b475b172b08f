"""Cluster metadata (L3): which topics exist, with how many partitions, and the cluster id."""
