"""`mindspore.dataset.text`: a vocabulary, tokenizers and string transforms for
`Dataset.map` (numpy str arrays in and out)."""
from msops.dataset.text.tokenizers import (BasicTokenizer, BertTokenizer, PythonTokenizer,
                                           RegexTokenizer, UnicodeCharTokenizer,
                                           WhitespaceTokenizer, WordpieceTokenizer)
from msops.dataset.text.transforms import (CaseFold, Lookup, Ngram, NormalizeUTF8, RegexReplace,
                                           SlidingWindow, ToNumber, TruncateSequencePair)
from msops.dataset.text.utils import NormalizeForm
from msops.dataset.text.vocab import Vocab

__all__ = ["Vocab", "Lookup", "WhitespaceTokenizer", "UnicodeCharTokenizer", "RegexTokenizer",
           "BasicTokenizer", "WordpieceTokenizer", "BertTokenizer", "PythonTokenizer", "Ngram",
           "ToNumber", "SlidingWindow", "TruncateSequencePair", "CaseFold", "RegexReplace",
           "NormalizeUTF8", "NormalizeForm"]
