"""msops.dataset.text: Vocab, Lookup, the tokenizers and the string transforms against
hand-written tokens, UTF-8 byte offsets and ids; tokenizers inside Dataset.map."""
import numpy as np
import pytest

import msops as ms
from msops import dataset as ds
from msops.dataset import text


def test_vocab_from_list_dict_file_and_lookups(tmp_path):
    v = text.Vocab.from_list(["a", "b", "c"], special_tokens=["<pad>", "<unk>"])
    assert v.vocab() == {"<pad>": 0, "<unk>": 1, "a": 2, "b": 3, "c": 4}
    last = text.Vocab.from_list(["a", "b"], special_tokens=["<pad>"], special_first=False)
    assert last.vocab() == {"a": 0, "b": 1, "<pad>": 2}
    assert v.tokens_to_ids("b") == 3 and v.tokens_to_ids(["c", "zz"]) == [4, -1]
    assert v.ids_to_tokens(2) == "a" and v.ids_to_tokens([4, 0, 99]) == ["c", "<pad>", ""]
    assert text.Vocab.from_dict({"x": 7, "y": 2}).tokens_to_ids(["y", "x"]) == [2, 7]
    (tmp_path / "vocab.txt").write_text("hello,10\nworld,3\n\nmsops,1\n")
    f = text.Vocab.from_file(str(tmp_path / "vocab.txt"), delimiter=",", vocab_size=2,
                             special_tokens=["<s>"])
    assert f.vocab() == {"<s>": 0, "hello": 1, "world": 2}
    with pytest.raises(ValueError, match="every word should appear once"):
        text.Vocab.from_list(["a", "a"])
    with pytest.raises(TypeError, match="'word_dict' should be a dict from str to int"):
        text.Vocab.from_dict({"a": -1})


def test_vocab_from_dataset_counts_filters_and_orders():
    lines = ["b a c a", "a c d", "e b a"]
    d = ds.GeneratorDataset([(l,) for l in lines], ["text"], shuffle=False)
    d = d.map(text.WhitespaceTokenizer(), input_columns=["text"])
    # counts: a 4, b 2, c 2, d 1, e 1 -> by count, ties by token
    assert text.Vocab.from_dataset(d).vocab() == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}
    v = text.Vocab.from_dataset(d, columns=["text"], freq_range=(2, 3), top_k=1,
                                special_tokens=["<unk>"], special_first=False)
    assert v.vocab() == {"b": 0, "<unk>": 1}
    ids = [r[0].tolist() for r in d.map(text.Lookup(
        text.Vocab.from_dataset(d), data_type=ms.int64)).create_tuple_iterator(output_numpy=True)]
    assert ids == [[1, 0, 2, 0], [0, 2, 3], [4, 1, 0]]


def test_lookup_unknown_token_and_dtype():
    v = text.Vocab.from_list(["[UNK]", "hi", "there"])
    out = text.Lookup(v, "[UNK]", ms.int32)(np.array([["hi", "you"], ["there", "hi"]]))
    assert out.dtype == np.int32 and out.tolist() == [[1, 0], [2, 1]]
    with pytest.raises(RuntimeError, match="the token 'you' is not in the vocab"):
        text.Lookup(v)(np.array(["you"]))
    with pytest.raises(ValueError, match="'unknown_token' should be in the vocab"):
        text.Lookup(v, "<unk>")


def test_whitespace_unicode_and_regex_tokenizers_with_byte_offsets():
    tokens, start, limit = text.WhitespaceTokenizer(True)(" Welcome to\tBéijing!\n")
    assert tokens.tolist() == ["Welcome", "to", "Béijing!"]
    assert start.dtype == np.uint32 and start.tolist() == [1, 9, 12]
    assert limit.tolist() == [8, 11, 21]                     # é is two bytes
    assert text.WhitespaceTokenizer()("   ").tolist() == [""]   # no token: one empty one
    tokens, start, limit = text.UnicodeCharTokenizer(True)("a你b")
    assert tokens.tolist() == ["a", "你", "b"]
    assert start.tolist() == [0, 1, 4] and limit.tolist() == [1, 4, 5]
    regex = text.RegexTokenizer(r"[\s,]+", r",", with_offsets=True)
    tokens, start, limit = regex("one, two three")
    # ', ' is one delimiter run: kept only where the keep pattern matches all of it
    assert tokens.tolist() == ["one", "two", "three"]
    assert start.tolist() == [0, 5, 9] and limit.tolist() == [3, 8, 14]
    tokens = text.RegexTokenizer(r"\s+|,", r",")("a,b  c")
    assert tokens.tolist() == ["a", ",", "b", "c"]
    with pytest.raises(ValueError, match="should be a scalar string"):
        text.WhitespaceTokenizer()(np.array(["a b", "c"]))


def test_basic_tokenizer():
    basic = text.BasicTokenizer(with_offsets=True)
    tokens, start, limit = basic("Hello, [CLS] wörld!你好")
    assert tokens.tolist() == ["Hello", ",", "[CLS]", "wörld", "!", "你", "好"]
    assert start.tolist() == [0, 5, 7, 13, 19, 20, 23]
    assert limit.tolist() == [5, 6, 12, 19, 20, 23, 26]
    lower = text.BasicTokenizer(lower_case=True)
    assert lower("Héllo [SEP] [unused3] ÀB").tolist() == ["hello", "[SEP]", "[unused3]", "ab"]
    assert text.BasicTokenizer(lower_case=True, preserve_unused_token=False)(
        "[SEP]").tolist() == ["[", "sep", "]"]
    assert text.BasicTokenizer(keep_whitespace=True)("a b\u0007c").tolist() == \
        ["a", " ", "b", " ", "c"]                 # a control character becomes a space
    nfkc = text.BasicTokenizer(normalization_form=text.NormalizeForm.NFKC)
    assert nfkc("ﬁne ①").tolist() == ["fine", "1"]


def test_wordpiece_and_bert_tokenizers():
    vocab = text.Vocab.from_list(["un", "##aff", "##able", "runn", "##ing", "[UNK]", "the",
                                  "a", "##b"])
    wp = text.WordpieceTokenizer(vocab, with_offsets=True)
    tokens, start, limit = wp(np.array(["unaffable", "running", "xyz", "ab"]))
    assert tokens.tolist() == ["un", "##aff", "##able", "runn", "##ing", "[UNK]", "a", "##b"]
    assert start.tolist() == [0, 2, 5, 0, 4, 0, 0, 1]
    assert limit.tolist() == [2, 5, 9, 4, 7, 3, 1, 2]
    assert text.WordpieceTokenizer(vocab, unknown_token="")(np.array(["xyz"])).tolist() == ["xyz"]
    assert text.WordpieceTokenizer(vocab, max_bytes_per_token=4)(
        np.array(["running", "un"])).tolist() == ["[UNK]", "un"]
    bert = text.BertTokenizer(vocab, lower_case=True, with_offsets=True)
    tokens, start, limit = bert("The UNAFFABLE x")
    assert tokens.tolist() == ["the", "un", "##aff", "##able", "[UNK]"]
    assert start.tolist() == [0, 4, 6, 9, 14] and limit.tolist() == [3, 6, 9, 13, 15]


def test_python_tokenizer_casefold_regex_replace_normalize():
    assert text.PythonTokenizer(lambda s: s.split("-"))("a-b-c").tolist() == ["a", "b", "c"]
    assert text.CaseFold()(np.array(["Straße", "ÄB"])).tolist() == ["strasse", "äb"]
    assert text.RegexReplace(r"(\d+)", r"<\1>")("a1b22").tolist() == "a<1>b<22>"
    assert text.RegexReplace(r"\d", "#", replace_all=False)("a1b2").tolist() == "a#b2"
    nfd = text.NormalizeUTF8(text.NormalizeForm.NFD)(np.array(["é"]))
    assert [len(s) for s in nfd.tolist()] == [2]
    assert text.NormalizeUTF8()("ｶ①").tolist() == "カ1"


def test_ngram():
    tokens = np.array(["a", "b", "c"])
    assert text.Ngram(2)(tokens).tolist() == ["a b", "b c"]
    assert text.Ngram([1, 3], left_pad=("<", 2), right_pad=(">", 1), separator="_")(
        tokens).tolist() == ["a", "b", "c", "<_<_a", "<_a_b", "a_b_c", "b_c_>"]
    assert text.Ngram(4)(tokens).tolist() == [""]                # too short: one empty string
    with pytest.raises(ValueError, match="'n' should be a positive int"):
        text.Ngram(0)


def test_to_number_sliding_window_truncate_pair():
    out = text.ToNumber(ms.int16)(np.array(["12", "-7"]))
    assert out.dtype == np.int16 and out.tolist() == [12, -7]
    out = text.ToNumber(ms.float32)(np.array([["1.5"], ["2e3"]]))
    assert out.dtype == np.float32 and out.tolist() == [[1.5], [2000.0]]
    with pytest.raises(RuntimeError, match="'40000' is out of the range of int16"):
        text.ToNumber(ms.int16)(np.array(["40000"]))
    with pytest.raises(RuntimeError, match="'x1' should be a number"):
        text.ToNumber(ms.int32)(np.array(["x1"]))
    w = text.SlidingWindow(3)(np.array([1, 2, 3, 4]))
    assert w.tolist() == [[1, 2, 3], [2, 3, 4]]
    w = text.SlidingWindow(2, axis=1)(np.arange(6).reshape(2, 3))
    assert w.tolist() == [[[0, 1], [1, 2]], [[3, 4], [4, 5]]]
    assert text.SlidingWindow(2)(np.array(["a", "b", "c"])).tolist() == [["a", "b"], ["b", "c"]]
    a, b = text.TruncateSequencePair(4)(np.array([1, 2, 3]), np.array([4, 5, 6, 7]))
    assert a.tolist() == [1, 2] and b.tolist() == [4, 5]
    a, b = text.TruncateSequencePair(5)(np.array([1, 2, 3, 9]), np.array([4]))
    assert a.tolist() == [1, 2, 3, 9] and b.tolist() == [4]


def test_tokenizer_with_offsets_in_a_pipeline():
    d = ds.GeneratorDataset([("hi there",), ("ok",)], ["text"], shuffle=False)
    d = d.map(text.WhitespaceTokenizer(True), input_columns=["text"],
              output_columns=["token", "start", "limit"])
    got = [[v.tolist() for v in r] for r in d.create_tuple_iterator(output_numpy=True)]
    assert got == [[["hi", "there"], [0, 3], [2, 8]], [["ok"], [0], [2]]]
