"""Datasets, as `mindspore.dataset`: GeneratorDataset and NumpySlicesDataset with batch,
shuffle (seeded), map, repeat, zip, concat, per-rank shards, samplers and tuple/dict
iterators; readers of the standard local layouts of vision, text and audio datasets
(MNIST family, CIFAR, COCO, VOC, CelebA, ..., TFRecord, IMDB, the CSV and line corpora, CLUE,
SQuAD, ..., YesNo, LJSpeech, ...; nothing is downloaded), text and CSV files; synthetic
datasets; `transforms`, `vision` and `text` for `map`."""
from msops.dataset import config
from msops.dataset.callback import DSCallback
from msops.dataset.engine import Dataset
from msops.dataset.shard import dataset_shards, parallel_shard
from msops.dataset.samplers import (BuiltinSampler, DistributedSampler, RandomSampler, Sampler,
                                    SequentialSampler, SubsetRandomSampler, SubsetSampler,
                                    WeightedRandomSampler, PKSampler)
from msops.dataset.sources import GeneratorDataset, NumpySlicesDataset, PaddedDataset
from msops.dataset.mnist import (EMnistDataset, FashionMnistDataset, KMnistDataset, MnistDataset,
                                 QMnistDataset)
from msops.dataset.cifar import Cifar10Dataset, Cifar100Dataset
from msops.dataset.imagefolder import (Caltech256Dataset, ImageFolderDataset, LSUNDataset,
                                       OmniglotDataset, RenderedSST2Dataset)
from msops.dataset.smallsets import SBUDataset, SemeionDataset, STL10Dataset
from msops.dataset.audio import (CMUArcticDataset, LibriTTSDataset, LJSpeechDataset,
                                 SpeechCommandsDataset, TedliumDataset, YesNoDataset)
from msops.dataset.matlabeled import Caltech101Dataset, Flowers102Dataset, SBDataset
from msops.dataset.widerface import WIDERFaceDataset
from msops.dataset.kitti import KITTIDataset
from msops.dataset.lfw import LFWDataset
from msops.dataset.cityscapes import CityscapesDataset
from msops.dataset.moresets import FlickrDataset, PhotoTourDataset, SVHNDataset, USPSDataset
from msops.dataset.scenes import DIV2KDataset, Food101Dataset, Places365Dataset, SUN397Dataset
from msops.dataset.linefiles import Shuffle, TextFileDataset
from msops.dataset.csvfile import CSVDataset
from msops.dataset.fake import FakeImageDataset
from msops.dataset.coco import CocoDataset
from msops.dataset.voc import VOCDataset
from msops.dataset.celeba import CelebADataset
from msops.dataset.manifest import ManifestDataset
from msops.dataset.tfrecord import TFRecordDataset
from msops.dataset.imdb import IMDBDataset
from msops.dataset.clue import CLUEDataset
from msops.dataset.iwslt import IWSLT2016Dataset, IWSLT2017Dataset
from msops.dataset.textsequences import (CoNLL2000Dataset, Multi30kDataset, SQuADDataset,
                                         SST2Dataset, UDPOSDataset)
from msops.dataset.textcorpora import (AGNewsDataset, AmazonReviewDataset, DBpediaDataset,
                                       EnWik9Dataset, PennTreebankDataset, SogouNewsDataset,
                                       WikiTextDataset, YahooAnswersDataset, YelpReviewDataset)
from msops.dataset.schema import Schema
from msops.dataset.randomdata import RandomDataset
from msops.dataset.combine import zip  # noqa: A004 - MindSpore's dataset.zip
from msops.dataset import text, transforms, vision  # noqa: F401  (ds.text, ds.vision, ...)

__all__ = ["Dataset", "GeneratorDataset", "NumpySlicesDataset", "config", "parallel_shard",
           "dataset_shards", "Sampler", "BuiltinSampler", "DistributedSampler", "RandomSampler",
           "SequentialSampler", "SubsetRandomSampler", "SubsetSampler"]
__all__ += ["MnistDataset", "FashionMnistDataset", "KMnistDataset", "Cifar10Dataset",
            "Cifar100Dataset"]
__all__ += ["ImageFolderDataset", "Shuffle", "TextFileDataset", "CSVDataset",
            "WeightedRandomSampler", "PKSampler", "PaddedDataset", "FakeImageDataset",
            "RandomDataset", "Schema", "zip", "DSCallback"]
__all__ += ["CocoDataset", "VOCDataset", "CelebADataset", "ManifestDataset", "TFRecordDataset"]
__all__ += ["IMDBDataset", "AGNewsDataset", "AmazonReviewDataset", "DBpediaDataset",
            "EnWik9Dataset", "PennTreebankDataset", "SogouNewsDataset", "WikiTextDataset",
            "YahooAnswersDataset", "YelpReviewDataset"]
__all__ += ["EMnistDataset", "Caltech256Dataset", "SBUDataset", "SemeionDataset",
            "STL10Dataset", "Food101Dataset", "Places365Dataset", "SUN397Dataset"]
__all__ += ["YesNoDataset", "SpeechCommandsDataset", "LJSpeechDataset", "Caltech101Dataset",
            "Flowers102Dataset", "CoNLL2000Dataset", "Multi30kDataset", "SQuADDataset",
            "SST2Dataset", "UDPOSDataset", "CLUEDataset",
            "QMnistDataset", "OmniglotDataset", "CMUArcticDataset", "LibriTTSDataset",
            "DIV2KDataset", "WIDERFaceDataset", "KITTIDataset", "LFWDataset",
            "FlickrDataset", "SVHNDataset", "USPSDataset", "RenderedSST2Dataset",
            "PhotoTourDataset", "CityscapesDataset",
            "TedliumDataset", "SBDataset", "IWSLT2016Dataset", "IWSLT2017Dataset",
            "LSUNDataset"]
