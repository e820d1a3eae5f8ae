"""Datasets, as `mindspore.dataset`: GeneratorDataset and NumpySlicesDataset with batch,
shuffle (seeded), map, repeat, per-rank shards, samplers and tuple/dict iterators."""
from msops.dataset import config
from msops.dataset.engine import Dataset
from msops.dataset.shard import dataset_shards, parallel_shard
from msops.dataset.samplers import (BuiltinSampler, DistributedSampler, RandomSampler, Sampler,
                                    SequentialSampler, SubsetRandomSampler, SubsetSampler)
from msops.dataset.sources import GeneratorDataset, NumpySlicesDataset

__all__ = ["Dataset", "GeneratorDataset", "NumpySlicesDataset", "config", "parallel_shard",
           "dataset_shards", "Sampler", "BuiltinSampler", "DistributedSampler", "RandomSampler",
           "SequentialSampler", "SubsetRandomSampler", "SubsetSampler"]
