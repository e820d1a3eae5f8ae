"""IMDBDataset and the CSV / line corpora (AGNews, AmazonReview, DBpedia, SogouNews,
YahooAnswers, YelpReview, WikiText, PennTreebank, EnWik9) over tiny corpora written here in
their published layouts; rows compared with the lines and fields written."""
import json

import numpy as np
import pytest

import msops as ms
from msops import dataset as ds


def rows(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


def text_rows(dataset):
    return [tuple(str(v) for v in r) for r in rows(dataset)]


@pytest.fixture
def imdb(tmp_path):
    reviews = {}
    for part in ("train", "test"):
        for name in ("pos", "neg"):
            (tmp_path / part / name).mkdir(parents=True)
            for k in (2, 0, 1):
                text = f"{part} {name} review {k}, \"quoted\"."
                (tmp_path / part / name / f"{k}_7.txt").write_text(text + "\n")
                reviews[(part, name, k)] = text
    return tmp_path, reviews


def test_imdb_rows_labels_and_order(imdb):
    root, reviews = imdb
    d = ds.IMDBDataset(str(root), usage="train", shuffle=False)
    assert d.get_col_names() == ["text", "label"]
    got = rows(d)
    want = [(reviews[("train", n, k)], 1 if n == "pos" else 0)
            for n in ("pos", "neg") for k in (0, 1, 2)]
    assert [(str(t), int(l)) for t, l in got] == want
    assert got[0][1].dtype == np.uint32 and got[0][1].shape == () and got[0][0].dtype.kind == "U"
    both = rows(ds.IMDBDataset(str(root), shuffle=False))
    assert len(both) == 12 and str(both[6][0]) == reviews[("test", "pos", 0)]
    shard = rows(ds.IMDBDataset(str(root), "test", shuffle=False, num_shards=4, shard_id=3))
    # round-robin over pos 0-2, neg 0-2: positions 3 and 7 % 6 = 1
    assert [str(t) for t, _ in shard] == [reviews[("test", "neg", 0)],
                                          reviews[("test", "pos", 1)]]
    picked = rows(ds.IMDBDataset(str(root), "test", sampler=ds.SubsetSampler([4, 0])))
    assert [str(t) for t, _ in picked] == [reviews[("test", "neg", 1)], reviews[("test", "pos", 0)]]
    with pytest.raises(ValueError, match="'usage' should be one of"):
        ds.IMDBDataset(str(root), usage="valid")


CSV_READERS = [
    (ds.AGNewsDataset, ["index", "title", "description"]),
    (ds.AmazonReviewDataset, ["label", "title", "content"]),
    (ds.DBpediaDataset, ["class", "title", "content"]),
    (ds.SogouNewsDataset, ["index", "title", "content"]),
    (ds.YahooAnswersDataset, ["class", "title", "content", "answer"]),
    (ds.YelpReviewDataset, ["label", "text"]),
]


@pytest.mark.parametrize("reader,columns", CSV_READERS, ids=[r.__name__ for r, _ in CSV_READERS])
def test_csv_corpora_columns_usage_and_quoting(tmp_path, reader, columns):
    def fields(part, k):
        return [f"{k}"] + [f"{part} {c} {k}, with \"quotes\"" for c in columns[1:]]

    def line(values):
        return ",".join('"' + v.replace('"', '""') + '"' for v in values)

    for part, n in (("train", 3), ("test", 2)):
        text = "\n".join(line(fields(part, k)) for k in range(n))
        (tmp_path / f"{part}.csv").write_text(text + "\n")
    d = reader(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == columns
    assert text_rows(d) == [tuple(fields("train", k)) for k in range(3)]
    every = text_rows(reader(str(tmp_path), shuffle=False))        # 'all': test.csv first
    assert every == [tuple(fields("test", k)) for k in range(2)] + \
        [tuple(fields("train", k)) for k in range(3)]
    shard = text_rows(reader(str(tmp_path), "all", shuffle=False, num_shards=2, shard_id=1))
    assert shard == every[3:] + every[:1]                    # a contiguous block, wrapped
    ms.set_seed(1)
    shuffled = text_rows(reader(str(tmp_path)))
    assert sorted(shuffled) == sorted(every)
    assert len(rows(reader(str(tmp_path), num_samples=2))) == 2
    (tmp_path / "test.csv").unlink()
    with pytest.raises(ValueError, match="test.csv"):
        reader(str(tmp_path), usage="test")


LINE_READERS = [
    (ds.WikiTextDataset, {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens",
                          "test": "wiki.test.tokens"}),
    (ds.PennTreebankDataset, {"train": "ptb.train.txt", "valid": "ptb.valid.txt",
                              "test": "ptb.test.txt"}),
]


@pytest.mark.parametrize("reader,files", LINE_READERS, ids=[r.__name__ for r, _ in LINE_READERS])
def test_line_corpora(tmp_path, reader, files):
    for usage, name in files.items():
        (tmp_path / name).write_text(f" = {usage} = \n\n{usage} line one\n{usage} <unk> two\n")
    d = reader(str(tmp_path), usage="valid", shuffle=False)
    assert d.get_col_names() == ["text"]
    assert [str(r[0]) for r in rows(d)] == [" = valid = ", "valid line one", "valid <unk> two"]
    every = [str(r[0]) for r in rows(reader(str(tmp_path), shuffle=False))]
    by_name = [u for _, u in sorted((n, u) for u, n in files.items())]
    assert every == [s for u in by_name for s in (f" = {u} = ", f"{u} line one", f"{u} <unk> two")]
    with pytest.raises(ValueError, match="'usage' should be one of"):
        reader(str(tmp_path), usage="dev")


def test_enwik9(tmp_path):
    (tmp_path / "enwik9").write_text("<mediawiki>\n  <page>\n\n  </page>\n")
    got = [str(r[0]) for r in rows(ds.EnWik9Dataset(str(tmp_path), shuffle=False))]
    assert got == ["<mediawiki>", "  <page>", "  </page>"]
    ms.set_seed(2)
    assert sorted(str(r[0]) for r in rows(ds.EnWik9Dataset(str(tmp_path)))) == sorted(got)
    with pytest.raises(ValueError, match="should hold the file 'enwik9'"):
        ds.EnWik9Dataset(str(tmp_path / ".."))


# ---- tagged, paired and QA corpora ---------------------------------------------------------

def test_conll2000_and_udpos_sentences(tmp_path):
    (tmp_path / "train.txt").write_text("Confidence NN B-NP\nin IN B-PP\n\nChancellor NNP O\n")
    (tmp_path / "test.txt").write_text("Rockwell NNP B-NP\n")
    d = ds.CoNLL2000Dataset(str(tmp_path), "train", shuffle=False)
    assert d.get_col_names() == ["word", "pos_tag", "chunk_tag"]
    got = [[c.tolist() for c in r] for r in rows(d)]
    assert got == [[["Confidence", "in"], ["NN", "IN"], ["B-NP", "B-PP"]],
                   [["Chancellor"], ["NNP"], ["O"]]]
    every = [r[0].tolist() for r in rows(ds.CoNLL2000Dataset(str(tmp_path), shuffle=False))]
    assert every == [["Rockwell"], ["Confidence", "in"], ["Chancellor"]]     # test.txt first
    for usage, name in (("train", "train"), ("valid", "dev"), ("test", "test")):
        (tmp_path / f"en-ud-tag.v2.{name}.txt").write_text(
            f"{usage}\tNOUN\tNN\n.\tPUNCT\t.\n\nok\tINTJ\tUH\n")
    u = ds.UDPOSDataset(str(tmp_path), "valid", shuffle=False)
    assert u.get_col_names() == ["word", "universal", "stanford"]
    assert [[c.tolist() for c in r] for r in rows(u)] == [
        [["valid", "."], ["NOUN", "PUNCT"], ["NN", "."]], [["ok"], ["INTJ"], ["UH"]]]
    assert len(rows(ds.UDPOSDataset(str(tmp_path), shuffle=False))) == 6
    with pytest.raises(RuntimeError, match="line 1 .* should have 3 fields"):
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad/train.txt").write_text("only two\n")
        (tmp_path / "bad/test.txt").write_text("")
        ds.CoNLL2000Dataset(str(tmp_path / "bad"))


def test_multi30k_pairs_and_language_order(tmp_path):
    for stem, lines in (("training/train", 2), ("validation/val", 1),
                        ("mmt16_task1_test/test", 1)):
        (tmp_path / stem).parent.mkdir(exist_ok=True)
        for lang in ("en", "de"):
            (tmp_path / f"{stem}.{lang}").write_text(
                "\n".join(f"{stem} {lang} {k}" for k in range(lines)) + "\n")
    d = ds.Multi30kDataset(str(tmp_path), "train", shuffle=False)
    assert d.get_col_names() == ["text", "translation"]
    assert text_rows(d) == [("training/train en 0", "training/train de 0"),
                            ("training/train en 1", "training/train de 1")]
    de_en = text_rows(ds.Multi30kDataset(str(tmp_path), "valid", ["de", "en"], shuffle=False))
    assert de_en == [("validation/val de 0", "validation/val en 0")]
    every = text_rows(ds.Multi30kDataset(str(tmp_path), shuffle=False))
    assert [t for t, _ in every] == ["mmt16_task1_test/test en 0", "training/train en 0",
                                     "training/train en 1", "validation/val en 0"]
    with pytest.raises(ValueError, match="'language_pair' should be"):
        ds.Multi30kDataset(str(tmp_path), language_pair=["en", "fr"])


def test_squad_questions_answers_and_unanswerable(tmp_path):
    tree = {"data": [{"title": "T", "paragraphs": [
        {"context": "Paris is in France.", "qas": [
            {"id": "1", "question": "Where is Paris?",
             "answers": [{"text": "France", "answer_start": 12},
                         {"text": "in France", "answer_start": 9}]},
            {"id": "2", "question": "Who?", "answers": [], "is_impossible": True}]}]}]}
    (tmp_path / "dev-v2.0.json").write_text(json.dumps(tree))
    (tmp_path / "train-v2.0.json").write_text(json.dumps({"data": []}))
    d = ds.SQuADDataset(str(tmp_path), "dev", shuffle=False)
    assert d.get_col_names() == ["context", "question", "text", "answer_start"]
    (ctx, q, text, start), (_, q2, text2, start2) = rows(d)
    assert (str(ctx), str(q)) == ("Paris is in France.", "Where is Paris?")
    assert text.tolist() == ["France", "in France"] and start.dtype == np.uint32
    assert start.tolist() == [12, 9]
    assert text2.tolist() == [""] and start2.tolist() == [4294967295]


def test_sst2_usages(tmp_path):
    (tmp_path / "train.tsv").write_text("sentence\tlabel\nhide new secretions \t0\ngreat\t1\n")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nit 's a charming trip\t1\n")
    (tmp_path / "test.tsv").write_text("index\tsentence\n0\tuneasy mishmash\n")
    d = ds.SST2Dataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["sentence", "label"]
    assert text_rows(d) == [("hide new secretions ", "0"), ("great", "1")]
    t = ds.SST2Dataset(str(tmp_path), "test", shuffle=False)
    assert t.get_col_names() == ["sentence"] and text_rows(t) == [("uneasy mishmash",)]


def test_argument_orders_follow_mindspore():
    import inspect
    order = lambda cls: list(inspect.signature(cls).parameters)        # noqa: E731
    late = ["dataset_dir", "usage", "num_samples", "shuffle", "num_shards", "shard_id",
            "num_parallel_workers", "cache"]
    early = ["dataset_dir", "usage", "num_samples", "num_parallel_workers", "shuffle",
             "num_shards", "shard_id", "cache"]
    for cls in (ds.SogouNewsDataset, ds.YelpReviewDataset, ds.CoNLL2000Dataset,
                ds.UDPOSDataset):
        assert order(cls) == late, cls
    for cls in (ds.AGNewsDataset, ds.AmazonReviewDataset, ds.DBpediaDataset,
                ds.YahooAnswersDataset, ds.WikiTextDataset, ds.PennTreebankDataset,
                ds.SQuADDataset, ds.SST2Dataset):
        assert order(cls) == early, cls


def test_clue_tasks_columns_and_types(tmp_path):
    afqmc = [{"sentence1": "双十一花呗提额在哪", "sentence2": "里可以提花呗额度", "label": "0"},
             {"sentence1": "a", "sentence2": "b", "label": "1"}]
    (tmp_path / "train.json").write_text("\n".join(json.dumps(o, ensure_ascii=False)
                                                   for o in afqmc) + "\n")
    d = ds.CLUEDataset(str(tmp_path / "train.json"), shuffle=False)
    assert d.get_col_names() == ["label", "sentence1", "sentence2"]
    assert text_rows(d) == [("0", "双十一花呗提额在哪", "里可以提花呗额度"), ("1", "a", "b")]
    (tmp_path / "test.json").write_text(json.dumps({"id": 7, "sentence1": "x",
                                                    "sentence2": "y"}) + "\n")
    (ident, s1, s2), = rows(ds.CLUEDataset(str(tmp_path / "test.json"), usage="test"))
    assert ident.dtype == np.uint32 and int(ident) == 7 and (str(s1), str(s2)) == ("x", "y")
    wsc = {"target": {"span1_index": 0, "span1_text": "他", "span2_index": 5,
                      "span2_text": "小明"}, "idx": 3, "text": "他说小明", "label": "true"}
    (tmp_path / "wsc.json").write_text(json.dumps(wsc) + "\n")
    w = ds.CLUEDataset(str(tmp_path / "wsc.json"), task="WSC", usage="eval", shuffle=False)
    assert w.get_col_names() == ["idx", "label", "span1_index", "span1_text", "span2_index",
                                 "span2_text", "text"]
    got = rows(w)[0]
    assert [v.item() if v.dtype.kind != "U" else str(v) for v in got] == \
        [3, "true", 0, "他", 5, "小明", "他说小明"]
    csl = {"id": 1, "abst": "摘要", "keyword": ["水", "土"], "label": "1"}
    (tmp_path / "csl.json").write_text(json.dumps(csl) + "\n")
    (abst, ident, keyword, label), = rows(ds.CLUEDataset(str(tmp_path / "csl.json"), "CSL"))
    assert keyword.tolist() == ["水", "土"] and str(abst) == "摘要" and int(ident) == 1
    with pytest.raises(RuntimeError, match="should have the key 'keywords'"):
        ds.CLUEDataset(str(tmp_path / "train.json"), task="TNEWS")


def test_iwslt_tags_and_xml_sets(tmp_path):
    def xml(prefix, lang, docs):
        body = "".join("<doc docid=\"%d\"><talkid>%d</talkid>" % (d, d) +
                       "".join(f"<seg id=\"{k}\"> {prefix} {lang} {d}.{k} </seg>"
                               for k in range(n)) + "</doc>" for d, n in docs)
        return f"<mteval><refset setid=\"x\" srclang=\"{lang}\">{body}</refset></mteval>"

    folder = tmp_path / "texts" / "de" / "en" / "de-en"
    folder.mkdir(parents=True)
    for lang in ("de", "en"):
        (folder / f"train.tags.de-en.{lang}").write_text(
            f"<url>http://x</url>\n  first {lang}  \n<talkid>1</talkid>\nsecond {lang}\n")
        (folder / f"IWSLT16.TED.tst2013.de-en.{lang}.xml").write_text(
            xml("valid", lang, [(1, 2), (2, 1)]))
        (folder / f"IWSLT16.TED.tst2014.de-en.{lang}.xml").write_text(xml("test", lang, [(3, 1)]))
    d = ds.IWSLT2016Dataset(str(tmp_path), "train", shuffle=False)
    assert d.get_col_names() == ["text", "translation"]
    assert text_rows(d) == [("first de", "first en"), ("second de", "second en")]
    assert text_rows(ds.IWSLT2016Dataset(str(tmp_path), "valid", shuffle=False)) == [
        ("valid de 1.0", "valid en 1.0"), ("valid de 1.1", "valid en 1.1"),
        ("valid de 2.0", "valid en 2.0")]
    assert len(rows(ds.IWSLT2016Dataset(str(tmp_path), shuffle=False))) == 6
    with pytest.raises(ValueError, match="'language_pair' should be"):
        ds.IWSLT2016Dataset(str(tmp_path), language_pair=["de", "fr"])
    folder17 = tmp_path / "texts" / "DeEnItNlRo" / "DeEnItNlRo" / "DeEnItNlRo-DeEnItNlRo"
    folder17.mkdir(parents=True)
    for lang in ("it", "nl"):
        (folder17 / f"train.tags.it-nl.{lang}").write_text(f"ciao {lang}\n")
    got = text_rows(ds.IWSLT2017Dataset(str(tmp_path), "train", ["it", "nl"], shuffle=False))
    assert got == [("ciao it", "ciao nl")]
    with pytest.raises(ValueError, match="IWSLT17.TED.dev2010.it-nl.it.xml' of usage 'valid'"):
        ds.IWSLT2017Dataset(str(tmp_path), "valid", ["it", "nl"])
