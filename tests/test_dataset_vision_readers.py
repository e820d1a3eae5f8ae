"""CocoDataset, VOCDataset, CelebADataset, ManifestDataset over tiny datasets written here
in each documented layout (JSON / XML / text lists and PNG files), rows compared with what
was written: values, dtypes, shapes, column names and order; shards and samplers as the
other readers'."""
import io
import json

import numpy as np
import pytest
from PIL import Image

import msops as ms
from msops import dataset as ds


def png(path, seed, size=(4, 5)):
    array = np.random.default_rng(seed).integers(0, 256, size + (3,), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    path.write_bytes(buf.getvalue())
    return array, buf.getvalue()


def rows(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


# ---- COCO ---------------------------------------------------------------------------------

@pytest.fixture
def coco(tmp_path):
    images = {name: png(tmp_path / name, k) for k, name in enumerate(["a.png", "b.png", "c.png"])}
    tree = {
        "images": [{"id": 10, "file_name": "a.png"}, {"id": 11, "file_name": "b.png"},
                   {"id": 12, "file_name": "c.png"}],
        "categories": [{"id": 1, "name": "cat", "isthing": 1},
                       {"id": 5, "name": "dog", "isthing": 0}],
        "annotations": [
            {"id": 1, "image_id": 11, "bbox": [1, 2, 3, 4], "category_id": 5, "iscrowd": 0,
             "segmentation": [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10]],
             "keypoints": [1, 2, 2, 3, 4, 1], "num_keypoints": 2, "caption": "a dog"},
            {"id": 2, "image_id": 10, "bbox": [5.5, 6, 7, 8], "category_id": 1,
             "segmentation": {"counts": [3, 1, 4]}, "iscrowd": 1,
             "keypoints": [9, 9, 2], "num_keypoints": 1, "caption": "a cat"},
            {"id": 3, "image_id": 11, "bbox": [0, 0, 1, 1], "category_id": 1, "iscrowd": 1,
             "segmentation": {"counts": [2, 2]},
             "keypoints": [5, 5, 1, 6, 6, 1], "num_keypoints": 2, "caption": "two"}],
    }
    (tmp_path / "ann.json").write_text(json.dumps(tree))
    panoptic = {"images": tree["images"], "categories": tree["categories"], "annotations": [
        {"image_id": 12, "file_name": "c.png", "segments_info": [
            {"id": 1, "bbox": [1, 1, 2, 2], "category_id": 5, "iscrowd": 0, "area": 40},
            {"id": 2, "bbox": [3, 3, 4, 4], "category_id": 1, "iscrowd": 1, "area": 7}]}]}
    (tmp_path / "pan.json").write_text(json.dumps(panoptic))
    return tmp_path, images


def test_coco_detection_rows_in_image_order(coco):
    root, images = coco
    d = ds.CocoDataset(str(root), str(root / "ann.json"), shuffle=False)
    assert d.get_col_names() == ["image", "bbox", "category_id", "iscrowd"]
    assert d.get_dataset_size() == 2                       # c.png has no annotation
    (img_a, bbox_a, cat_a, crowd_a), (img_b, bbox_b, cat_b, crowd_b) = rows(d)
    assert img_a.dtype == np.uint8 and img_a.tobytes() == images["a.png"][1]
    np.testing.assert_array_equal(bbox_a, np.array([[5.5, 6, 7, 8]], np.float32))
    assert bbox_a.dtype == np.float32 and cat_a.dtype == np.uint32
    np.testing.assert_array_equal(cat_a, [[1]])
    np.testing.assert_array_equal(crowd_a, [[1]])
    np.testing.assert_array_equal(bbox_b, [[1, 2, 3, 4], [0, 0, 1, 1]])
    np.testing.assert_array_equal(cat_b, [[5], [1]])
    np.testing.assert_array_equal(crowd_b, [[0], [1]])
    assert d.get_class_indexing() == {"cat": [1], "dog": [5]}
    decoded = rows(ds.CocoDataset(str(root), str(root / "ann.json"), decode=True,
                                  shuffle=False))
    np.testing.assert_array_equal(decoded[1][0], images["b.png"][0])


def test_coco_stuff_keypoint_panoptic_captioning(coco):
    root, images = coco
    ann = str(root / "ann.json")
    stuff = rows(ds.CocoDataset(str(root), ann, task="Stuff", shuffle=False))
    np.testing.assert_array_equal(stuff[0][1], [[3, 1, 4]])
    # b: two polygons then one crowd's counts, padded with -1 to the longest
    np.testing.assert_array_equal(stuff[1][1], [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, -1, -1],
                                                [2, 2, -1, -1, -1, -1]])
    np.testing.assert_array_equal(stuff[1][2], [[0], [1]])
    assert stuff[1][1].dtype == np.float32 and stuff[1][2].dtype == np.uint32
    key = ds.CocoDataset(str(root), ann, task="Keypoint", shuffle=False)
    assert key.get_col_names() == ["image", "keypoints", "num_keypoints"]
    key_rows = rows(key)
    np.testing.assert_array_equal(key_rows[1][1], [[1, 2, 2, 3, 4, 1], [5, 5, 1, 6, 6, 1]])
    np.testing.assert_array_equal(key_rows[1][2], [[2], [2]])
    pan = ds.CocoDataset(str(root), str(root / "pan.json"), task="Panoptic", shuffle=False)
    assert pan.get_col_names() == ["image", "bbox", "category_id", "iscrowd", "area"]
    (image, bbox, cat, crowd, area), = rows(pan)
    assert image.tobytes() == images["c.png"][1]
    np.testing.assert_array_equal(bbox, [[1, 1, 2, 2], [3, 3, 4, 4]])
    np.testing.assert_array_equal(np.hstack([cat, crowd, area]), [[5, 0, 40], [1, 1, 7]])
    assert area.dtype == np.uint32
    assert pan.get_class_indexing() == {"cat": [1, 1], "dog": [5, 0]}
    cap = rows(ds.CocoDataset(str(root), ann, task="Captioning", shuffle=False,
                              extra_metadata=True))
    assert cap[1][1].shape == (2, 1) and [c[0] for c in cap[1][1]] == ["a dog", "two"]
    assert str(cap[0][2]) == "a"


def test_coco_shards_and_errors(coco):
    root, _ = coco
    ann = str(root / "ann.json")
    parts = [[r[0].tobytes() for r in rows(ds.CocoDataset(str(root), ann, num_shards=2,
                                                          shard_id=k, shuffle=False))]
             for k in range(2)]
    whole = [r[0].tobytes() for r in rows(ds.CocoDataset(str(root), ann, shuffle=False))]
    assert parts == [[whole[0]], [whole[1]]]
    ms.set_seed(3)
    a = [r[0].tobytes() for r in rows(ds.CocoDataset(str(root), ann))]
    ms.set_seed(3)
    assert a == [r[0].tobytes() for r in rows(ds.CocoDataset(str(root), ann))]
    assert sorted(a) == sorted(whole)
    with pytest.raises(ValueError, match="'task' should be one of"):
        ds.CocoDataset(str(root), ann, task="Boxes")
    (root / "bad.json").write_text(json.dumps({"images": [{"id": 1, "file_name": "a.png"}],
                                               "categories": [{"id": 1, "name": "x"}],
                                               "annotations": [{"id": 1, "image_id": 1,
                                                                "bbox": [1, 1, 1, 1],
                                                                "category_id": 9}]}))
    with pytest.raises(RuntimeError, match="'category_id' 9 is not in the 'categories'"):
        ds.CocoDataset(str(root), str(root / "bad.json"))
    with pytest.raises(RuntimeError, match="only valid for the 'Detection' and 'Panoptic'"):
        ds.CocoDataset(str(root), ann, task="Stuff").get_class_indexing()


# ---- VOC ----------------------------------------------------------------------------------

def voc_xml(objects):
    body = "".join(
        f"<object><name>{n}</name><difficult>{d}</difficult><truncated>{t}</truncated>"
        f"<bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax>"
        f"<ymax>{b[3]}</ymax></bndbox></object>" for n, b, d, t in objects)
    return f"<annotation><filename>x.jpg</filename>{body}</annotation>"


@pytest.fixture
def voc(tmp_path):
    for sub in ("ImageSets/Segmentation", "ImageSets/Main", "JPEGImages", "SegmentationClass",
                "Annotations"):
        (tmp_path / sub).mkdir(parents=True)
    ids = ["2007_01", "2007_02", "2007_03"]
    files = {}
    for k, i in enumerate(ids):
        files[i] = (png(tmp_path / "JPEGImages" / f"{i}.jpg", k)[1],
                    png(tmp_path / "SegmentationClass" / f"{i}.png", 10 + k)[1])
    (tmp_path / "ImageSets/Segmentation/train.txt").write_text("2007_02\r\n2007_01\n")
    (tmp_path / "ImageSets/Main/train.txt").write_text("\n".join(ids) + "\n")
    xml = {"2007_01": [("dog", (2, 3, 10, 9), 0, 1), ("cat", (1, 1, 4, 5), 1, 0)],
           "2007_02": [("person", (0, 3, 4, 5), 0, 0)],            # xmin 0: invalid, left out
           "2007_03": [("cat", (5, 6, 7, 8.5), 0, 0), ("car", (3, 3, 3, 4), 0, 0)]}
    for i, objs in xml.items():
        (tmp_path / "Annotations" / f"{i}.xml").write_text(voc_xml(objs))
    return tmp_path, files


def test_voc_segmentation_reads_the_listed_pairs(voc):
    root, files = voc
    d = ds.VOCDataset(str(root), task="Segmentation", usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "target"]
    got = rows(d)
    assert [(a.tobytes(), b.tobytes()) for a, b in got] == [files["2007_02"], files["2007_01"]]


def test_voc_detection_boxes_labels_and_indexing(voc):
    root, files = voc
    d = ds.VOCDataset(str(root), task="Detection", shuffle=False)
    assert d.get_col_names() == ["image", "bbox", "label", "difficult", "truncate"]
    assert d.get_class_indexing() == {"cat": 0, "dog": 1}
    got = rows(d)
    assert len(got) == 2                    # 2007_02 has no valid object
    image, bbox, label, difficult, truncate = got[0]
    assert image.tobytes() == files["2007_01"][0]
    np.testing.assert_array_equal(bbox, [[2, 3, 8, 6], [1, 1, 3, 4]])
    assert bbox.dtype == np.float32 and label.dtype == np.uint32
    np.testing.assert_array_equal(label, [[1], [0]])
    np.testing.assert_array_equal(difficult, [[0], [1]])
    np.testing.assert_array_equal(truncate, [[1], [0]])
    np.testing.assert_array_equal(got[1][1], [[5, 6, 2, 2.5]])     # the car box is empty
    only = ds.VOCDataset(str(root), task="Detection", class_indexing={"dog": 7}, shuffle=False)
    (_, bbox, label, _, _), = rows(only)
    np.testing.assert_array_equal(bbox, [[2, 3, 8, 6]])
    np.testing.assert_array_equal(label, [[7]])
    with pytest.raises(ValueError, match="usage' 'val' should name a list"):
        ds.VOCDataset(str(root), usage="val")
    with pytest.raises(ValueError, match="only valid for the 'Detection' task"):
        ds.VOCDataset(str(root), class_indexing={"dog": 0})


# ---- CelebA -------------------------------------------------------------------------------

def test_celeba_attrs_partitions_and_shards(tmp_path):
    names = [f"00000{k}.jpg" for k in range(1, 6)]
    images = [png(tmp_path / n, k)[1] for k, n in enumerate(names)]
    attrs = np.random.default_rng(0).choice([-1, 1], (5, 40))
    lines = ["5", " ".join(f"attr{k}" for k in range(40))]
    lines += [f"{n}  " + " ".join(str(v) for v in a) for n, a in zip(names, attrs)]
    (tmp_path / "list_attr_celeba.txt").write_text("\n".join(lines) + "\n")
    parts = [0, 1, 0, 2, 0]
    (tmp_path / "list_eval_partition.txt").write_text(
        "\n".join(f"{n} {p}" for n, p in zip(names, parts)) + "\n")
    d = ds.CelebADataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "attr"]
    got = rows(d)
    assert [g[0].tobytes() for g in got] == images
    for (_, attr), want in zip(got, attrs):
        assert attr.dtype == np.uint32 and attr.shape == (40,)
        np.testing.assert_array_equal(attr, (want == 1).astype(np.uint32))
    train = rows(ds.CelebADataset(str(tmp_path), usage="train", shuffle=False))
    assert [g[0].tobytes() for g in train] == [images[0], images[2], images[4]]
    test = rows(ds.CelebADataset(str(tmp_path), usage="test", shuffle=False))
    assert [g[0].tobytes() for g in test] == [images[3]]
    shard = rows(ds.CelebADataset(str(tmp_path), shuffle=False, num_shards=2, shard_id=1))
    assert [g[0].tobytes() for g in shard] == [images[1], images[3], images[0]]
    assert len(rows(ds.CelebADataset(str(tmp_path), num_samples=2))) == 2
    with pytest.raises(ValueError, match="'usage' should be one of"):
        ds.CelebADataset(str(tmp_path), usage="val")


# ---- Manifest -----------------------------------------------------------------------------

def test_manifest_labels_usage_and_class_indexing(tmp_path):
    images = [png(tmp_path / f"{k}.png", k)[1] for k in range(4)]
    cls = "modelarts/image_classification"
    entries = [
        {"source": str(tmp_path / "0.png"), "usage": "TRAIN",
         "annotation": [{"type": cls, "name": "dog"}]},
        {"source": str(tmp_path / "1.png"), "usage": "train",
         "annotation": [{"type": cls, "name": "cat"}, {"type": cls, "name": "dog"}]},
        {"source": str(tmp_path / "2.png"), "usage": "eval",
         "annotation": [{"type": cls, "name": "bird"}]},
        {"source": str(tmp_path / "3.png"), "usage": "train",
         "annotation": [{"type": "modelarts/object_detection", "name": "x"}]},
    ]
    path = tmp_path / "m.manifest"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    d = ds.ManifestDataset(str(path), shuffle=False)
    assert d.get_col_names() == ["image", "label"]
    assert d.get_class_indexing() == {"cat": 0, "dog": 1} and d.num_classes() == 2
    (i0, l0), (i1, l1) = rows(d)
    assert i0.tobytes() == images[0] and i1.tobytes() == images[1]
    assert l0.shape == () and l0.dtype == np.uint64 and int(l0) == 1
    np.testing.assert_array_equal(l1, [0, 1])
    assert l1.dtype == np.uint64
    (i2, l2), = rows(ds.ManifestDataset(str(path), usage="eval", shuffle=False))
    assert i2.tobytes() == images[2] and int(l2) == 0
    only = rows(ds.ManifestDataset(str(path), class_indexing={"cat": 4}, shuffle=False))
    assert len(only) == 1 and int(only[0][1]) == 4
    with pytest.raises(ValueError, match="'usage' should be one of"):
        ds.ManifestDataset(str(path), usage="test")


# ---- STL10, Semeion, SBU, Caltech256, EMNIST -----------------------------------------------

def test_stl10_column_major_planes_labels_and_usage(tmp_path):
    rng = np.random.default_rng(0)
    images = {p: rng.integers(0, 256, (n, 96, 96, 3), dtype=np.uint8)
              for p, n in (("train", 3), ("test", 2), ("unlabeled", 2))}
    for part, hwc in images.items():
        # the file stores each channel plane column by column (x outer, y inner)
        (tmp_path / f"{part}_X.bin").write_bytes(hwc.transpose(0, 3, 2, 1).tobytes())
    (tmp_path / "train_y.bin").write_bytes(bytes([3, 10, 1]))
    (tmp_path / "test_y.bin").write_bytes(bytes([5, 2]))
    d = ds.STL10Dataset(str(tmp_path), usage="train", shuffle=False)
    got = rows(d)
    assert d.get_col_names() == ["image", "label"]
    for (image, label), want, y in zip(got, images["train"], [2, 9, 0]):
        assert image.shape == (96, 96, 3) and image.dtype == np.uint8
        np.testing.assert_array_equal(image, want)
        assert label.dtype == np.int32 and int(label) == y
    every = rows(ds.STL10Dataset(str(tmp_path), shuffle=False))
    assert [int(r[1]) for r in every] == [4, 1, 2, 9, 0, -1, -1]       # test, train, unlabeled
    np.testing.assert_array_equal(every[6][0], images["unlabeled"][1])
    mixed = rows(ds.STL10Dataset(str(tmp_path), "train+unlabeled", shuffle=False))
    assert [int(r[1]) for r in mixed] == [2, 9, 0, -1, -1]
    (tmp_path / "test_y.bin").write_bytes(bytes([5]))
    with pytest.raises(ValueError, match="one label byte per image"):
        ds.STL10Dataset(str(tmp_path), usage="test")


def test_semeion_pixels_and_one_hot_labels(tmp_path):
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 2, (3, 256))
    labels = [7, 0, 9]
    lines = [" ".join(f"{p:.4f}" for p in px) + " " + " ".join("1" if k == y else "0"
                                                               for k in range(10)) + " "
             for px, y in zip(pixels, labels)]
    (tmp_path / "semeion.data").write_text("\n".join(lines) + "\n")
    got = rows(ds.SemeionDataset(str(tmp_path), shuffle=False))
    for (image, label), px, y in zip(got, pixels, labels):
        assert image.dtype == np.uint8 and image.shape == (16, 16)
        np.testing.assert_array_equal(image.reshape(-1), px)
        assert label.dtype == np.uint32 and int(label) == y
    assert len(rows(ds.SemeionDataset(str(tmp_path), num_shards=2, shard_id=0))) == 2


def test_sbu_lists_and_missing_images(tmp_path):
    (tmp_path / "sbu_images").mkdir()
    blobs = {n: png(tmp_path / "sbu_images" / n, k)[1]
             for k, n in enumerate(["a_1.jpg", "c_3.jpg"])}
    (tmp_path / "SBU_captioned_photo_dataset_urls.txt").write_text(
        "http://static.flickr.com/1/a_1.jpg\nhttp://static.flickr.com/2/b_2.jpg\n"
        "http://static.flickr.com/3/c_3.jpg\n")
    (tmp_path / "SBU_captioned_photo_dataset_captions.txt").write_text(
        "a cat on a mat \nno image here\nthe sea\n")
    d = ds.SBUDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "caption"]
    got = rows(d)                                   # b_2.jpg was never downloaded
    assert [(i.tobytes(), str(c)) for i, c in got] == [(blobs["a_1.jpg"], "a cat on a mat"),
                                                     (blobs["c_3.jpg"], "the sea")]


def test_caltech256_folders_and_extensions(tmp_path):
    blobs = {}
    for k, folder in enumerate(["002.american-flag", "001.ak47", "257.clutter"]):
        (tmp_path / folder).mkdir()
        blobs[folder] = png(tmp_path / folder / "0001.jpg", k)[1]
        (tmp_path / folder / "notes.txt").write_text("skipped")
    got = rows(ds.Caltech256Dataset(str(tmp_path), shuffle=False))
    assert [(i.tobytes(), int(l)) for i, l in got] == [
        (blobs["001.ak47"], 0), (blobs["002.american-flag"], 1), (blobs["257.clutter"], 2)]
    assert got[0][1].dtype == np.uint32


def test_emnist_split_files(tmp_path):
    from test_dataset_readers import write_idx
    rng = np.random.default_rng(2)
    data = {}
    for split in ("letters", "digits"):
        for usage, n in (("train", 3), ("test", 2)):
            images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
            labels = rng.integers(0, 26, n, dtype=np.uint8)
            write_idx(tmp_path, f"emnist-{split}-{usage}", images, labels)
            data[(split, usage)] = (images, labels)
    got = rows(ds.EMnistDataset(str(tmp_path), "letters", "train", shuffle=False))
    images, labels = data[("letters", "train")]
    for (image, label), x, y in zip(got, images, labels):
        np.testing.assert_array_equal(image[..., 0], x)
        assert label.dtype == np.uint32 and int(label) == int(y)
    every = rows(ds.EMnistDataset(str(tmp_path), "digits", shuffle=False))
    assert [int(r[1]) for r in every] == data[("digits", "test")][1].tolist() + \
        data[("digits", "train")][1].tolist()
    with pytest.raises(ValueError, match="'name' should be one of"):
        ds.EMnistDataset(str(tmp_path), "kana")


# ---- SUN397, Places365, Food101 ----------------------------------------------------------

def test_sun397_classes_from_the_list(tmp_path):
    (tmp_path / "ClassName.txt").write_text("/a/abbey\n/b/bakery\n")
    blobs = {}
    for k, (cls, name) in enumerate([("a/abbey", "sun_b.jpg"), ("a/abbey", "sun_a.jpg"),
                                     ("b/bakery", "sun_c.jpg")]):
        (tmp_path / cls).mkdir(parents=True, exist_ok=True)
        blobs[(cls, name)] = png(tmp_path / cls / name, k)[1]
    (tmp_path / "a/abbey/notes.jpg").write_text("not sun_")
    d = ds.SUN397Dataset(str(tmp_path), shuffle=False)
    assert d.get_class_indexing() == {"/a/abbey": 0, "/b/bakery": 1}
    got = [(i.tobytes(), int(l)) for i, l in rows(d)]
    assert got == [(blobs[("a/abbey", "sun_a.jpg")], 0), (blobs[("a/abbey", "sun_b.jpg")], 0),
                   (blobs[("b/bakery", "sun_c.jpg")], 1)]
    assert rows(d)[0][1].dtype == np.uint32


def test_places365_lists_usage_and_small(tmp_path):
    (tmp_path / "categories_places365.txt").write_text("/a/airfield 0\n/b/bar 1\n")
    blobs = {}
    for folder in ("data_256_standard", "val_large"):
        for k, rel in enumerate(["a/airfield/00000001.jpg", "b/bar/00000002.jpg"]):
            path = tmp_path / folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            blobs[(folder, rel)] = png(path, k + len(folder))[1]
    (tmp_path / "places365_train_standard.txt").write_text(
        "/b/bar/00000002.jpg 1\n/a/airfield/00000001.jpg 0\n")
    (tmp_path / "places365_val.txt").write_text("a/airfield/00000001.jpg 0\n")
    d = ds.Places365Dataset(str(tmp_path), shuffle=False)
    assert d.get_class_indexing() == {"/a/airfield": 0, "/b/bar": 1}
    got = [(i.tobytes(), int(l)) for i, l in rows(d)]
    assert got == [(blobs[("data_256_standard", "b/bar/00000002.jpg")], 1),
                   (blobs[("data_256_standard", "a/airfield/00000001.jpg")], 0)]
    (image, label), = rows(ds.Places365Dataset(str(tmp_path), "val", small=False))
    assert image.tobytes() == blobs[("val_large", "a/airfield/00000001.jpg")]
    assert label.dtype == np.uint32 and int(label) == 0
    with pytest.raises(ValueError, match="'usage' should be one of"):
        ds.Places365Dataset(str(tmp_path), "test")


def test_food101_meta_lists_and_string_labels(tmp_path):
    blobs = {}
    for k, entry in enumerate(["apple_pie/101", "apple_pie/7", "ramen/55"]):
        path = tmp_path / "images" / (entry + ".jpg")
        path.parent.mkdir(parents=True, exist_ok=True)
        blobs[entry] = png(path, k)[1]
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta/train.txt").write_text("ramen/55\napple_pie/7\n")
    (tmp_path / "meta/test.txt").write_text("apple_pie/101\n")
    got = [(i.tobytes(), str(l)) for i, l in rows(ds.Food101Dataset(str(tmp_path), shuffle=False))]
    assert got == [(blobs["ramen/55"], "ramen"), (blobs["apple_pie/7"], "apple_pie"),
                   (blobs["apple_pie/101"], "apple_pie")]
    test = rows(ds.Food101Dataset(str(tmp_path), "test", decode=True, shuffle=False))
    assert test[0][0].shape == (4, 5, 3) and test[0][1].dtype.kind == "U"


# ---- .mat labelled: Flowers102, Caltech101 (files written with scipy.io.savemat) ------------

def test_mat_reader_against_scipy(tmp_path):
    from scipy.io import savemat
    from msops.dataset.matfile import load_mat
    arrays = {"d": np.arange(6.0).reshape(2, 3), "u": np.array([[3, 1, 2]], np.uint8),
              "i": np.array([[-5], [7]], np.int32), "f": np.float32([[1.5, -2.25]])}
    for compress in (False, True):
        savemat(tmp_path / "a.mat", arrays, do_compression=compress)
        got = load_mat(str(tmp_path / "a.mat"))
        for name, want in arrays.items():
            assert got[name].dtype == want.dtype and got[name].shape == want.shape
            np.testing.assert_array_equal(got[name], want)
    (tmp_path / "b.mat").write_bytes(b"MATLAB 5.0" + bytes(200))
    with pytest.raises(ValueError, match="not a MATLAB level-5 .mat file"):
        load_mat(str(tmp_path / "b.mat"))


def test_flowers102_sets_labels_and_segmentation(tmp_path):
    from scipy.io import savemat
    (tmp_path / "jpg").mkdir()
    (tmp_path / "segmim").mkdir()
    blobs = {}
    for i in range(1, 6):
        blobs[i] = (png(tmp_path / "jpg" / f"image_{i:05d}.jpg", i)[1],
                    png(tmp_path / "segmim" / f"segmim_{i:05d}.jpg", 10 + i)[1])
    savemat(tmp_path / "imagelabels.mat", {"labels": np.array([[77, 1, 102, 5, 5]], np.uint8)})
    savemat(tmp_path / "setid.mat", {"trnid": np.array([[4, 1]], np.uint16),
                                     "valid": np.array([[2]], np.uint16),
                                     "tstid": np.array([[5, 3]], np.uint16)}, do_compression=True)
    d = ds.Flowers102Dataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "label"]
    got = [(i.tobytes(), l) for i, l in rows(d)]
    assert [g[0] for g in got] == [blobs[4][0], blobs[1][0]]
    assert [int(g[1]) for g in got] == [4, 76] and got[0][1].dtype == np.uint32
    every = rows(ds.Flowers102Dataset(str(tmp_path), shuffle=False))      # train, test, valid
    assert [int(r[1]) for r in every] == [4, 76, 4, 101, 0]
    seg = ds.Flowers102Dataset(str(tmp_path), "Segmentation", "valid", shuffle=False)
    (image, segmentation, label), = rows(seg)
    assert (image.tobytes(), segmentation.tobytes(), int(label)) == (blobs[2][0], blobs[2][1], 0)


def test_caltech101_categories_and_contours(tmp_path):
    from scipy.io import savemat
    blobs, contours = {}, {}
    for name, count in (("airplanes", 2), ("Faces", 1), ("BACKGROUND_Google", 1), ("ant", 1)):
        (tmp_path / "101_ObjectCategories" / name).mkdir(parents=True)
        for k in range(1, count + 1):
            blobs[(name, k)] = png(tmp_path / "101_ObjectCategories" / name / f"image_{k:04d}.jpg",
                                   len(blobs))[1]
            folder = {"airplanes": "Airplanes_Side_2", "Faces": "Faces_2"}.get(name, name)
            (tmp_path / "Annotations" / folder).mkdir(parents=True, exist_ok=True)
            contour = np.random.default_rng(k).random((2, 3 + k))
            savemat(tmp_path / "Annotations" / folder / f"annotation_{k:04d}.mat",
                    {"obj_contour": contour, "box_coord": np.array([[1, 2, 3, 4]])})
            contours[(name, k)] = contour
    d = ds.Caltech101Dataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "category"]
    assert d.get_class_indexing() == {"Faces": 0, "airplanes": 1, "ant": 2}
    got = [(i.tobytes(), int(c)) for i, c in rows(d)]
    assert got == [(blobs[("Faces", 1)], 0), (blobs[("airplanes", 1)], 1),
                   (blobs[("airplanes", 2)], 1), (blobs[("ant", 1)], 2)]
    every = rows(ds.Caltech101Dataset(str(tmp_path), "all", shuffle=False))
    assert [len(r) for r in every] == [3] * 4 and every[0][1].dtype == np.uint32
    for row, key in zip(every, [("Faces", 1), ("airplanes", 1), ("airplanes", 2), ("ant", 1)]):
        assert row[2].dtype == np.float64
        np.testing.assert_array_equal(row[2], contours[key])
    ann = ds.Caltech101Dataset(str(tmp_path), "annotation", shuffle=False)
    assert ann.get_col_names() == ["image", "annotation"]


# ---- QMNIST, Omniglot ---------------------------------------------------------------------

def write_qmnist(folder, prefix, images, labels):
    import struct
    n = len(images)
    (folder / f"{prefix}-images-idx3-ubyte").write_bytes(
        struct.pack(">IIII", 2051, n, 28, 28) + images.astype(np.uint8).tobytes())
    (folder / f"{prefix}-labels-idx2-int").write_bytes(
        struct.pack(">III", 3074, n, 8) + labels.astype(">i4").tobytes())


def test_qmnist_compat_labels_and_usages(tmp_path):
    rng = np.random.default_rng(3)
    data = {}
    for prefix, n in (("qmnist-train", 3), ("qmnist-test", 10002), ("xnist", 2)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 100000, (n, 8))
        write_qmnist(tmp_path, prefix, images, labels)
        data[prefix] = (images, labels)
    got = rows(ds.QMnistDataset(str(tmp_path), "train", shuffle=False))
    for (image, label), x, y in zip(got, *data["qmnist-train"]):
        np.testing.assert_array_equal(image[..., 0], x)
        assert label.dtype == np.uint32 and label.shape == () and int(label) == y[0]
    full = rows(ds.QMnistDataset(str(tmp_path), "nist", compat=False, shuffle=False))
    assert full[1][1].dtype == np.uint32 and full[1][1].tolist() == data["xnist"][1][1].tolist()
    assert ds.QMnistDataset(str(tmp_path), "test10k").get_dataset_size() == 10000
    tail = rows(ds.QMnistDataset(str(tmp_path), "test50k", shuffle=False))
    assert [int(r[1]) for r in tail] == data["qmnist-test"][1][10000:, 0].tolist()
    assert ds.QMnistDataset(str(tmp_path)).get_dataset_size() == 3 + 10002 + 2
    with pytest.raises(ValueError, match="'usage' should be one of"):
        ds.QMnistDataset(str(tmp_path), "valid")


def test_omniglot_alphabet_character_classes(tmp_path):
    blobs = {}
    for split in ("images_background", "images_evaluation"):
        for k, rel in enumerate(["Latin/character02/b.png", "Latin/character01/a.png",
                                 "Greek/character01/c.png", "Latin/character01/0.png"]):
            path = tmp_path / split / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            blobs[(split, rel)] = png(path, k + len(split))[1]
    got = [(i.tobytes(), int(l)) for i, l in rows(ds.OmniglotDataset(str(tmp_path),
                                                                     shuffle=False))]
    bg = "images_background"
    assert got == [(blobs[(bg, "Greek/character01/c.png")], 0),
                   (blobs[(bg, "Latin/character01/0.png")], 1),
                   (blobs[(bg, "Latin/character01/a.png")], 1),
                   (blobs[(bg, "Latin/character02/b.png")], 2)]
    ev = rows(ds.OmniglotDataset(str(tmp_path), background=False, shuffle=False))
    assert ev[0][0].tobytes() == blobs[("images_evaluation", "Greek/character01/c.png")]


def test_div2k_pairs_by_downgrade_and_scale(tmp_path):
    blobs = {}

    def put(rel, seed):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        blobs[rel] = png(path, seed)[1]
    for part in ("train", "valid"):
        for k, n in enumerate(["0002", "0001"]):
            put(f"DIV2K_{part}_HR/{n}.png", k)
            put(f"DIV2K_{part}_LR_bicubic/X3/{n}x3.png", 10 + k)
            put(f"DIV2K_{part}_LR_mild/{n}x4m.png", 20 + k)
    got = rows(ds.DIV2KDataset(str(tmp_path), "train", "bicubic", 3, shuffle=False))
    assert [(h.tobytes(), l.tobytes()) for h, l in got] == [
        (blobs["DIV2K_train_HR/0001.png"], blobs["DIV2K_train_LR_bicubic/X3/0001x3.png"]),
        (blobs["DIV2K_train_HR/0002.png"], blobs["DIV2K_train_LR_bicubic/X3/0002x3.png"])]
    mild = rows(ds.DIV2KDataset(str(tmp_path), "all", "mild", 4, shuffle=False))
    assert [l.tobytes() for _, l in mild] == [blobs[f"DIV2K_{p}_LR_mild/{n}x4m.png"]
                                             for p in ("train", "valid") for n in ("0001", "0002")]
    assert ds.DIV2KDataset(str(tmp_path), "valid", "mild", 4).get_col_names() == \
        ["hr_image", "lr_image"]
    with pytest.raises(ValueError, match="'scale' should be one of \\[4\\]"):
        ds.DIV2KDataset(str(tmp_path), downgrade="wild", scale=2)


def test_widerface_annotations_and_usages(tmp_path):
    blobs = {}
    train = ["0--Parade/a.jpg", "0--Parade/b.jpg", "1--Handshaking/c.jpg"]
    for base, names in (("WIDER_train", train),
                        ("WIDER_val", ["0--Parade/v.jpg"]), ("WIDER_test", ["0--Parade/t.jpg"])):
        for k, rel in enumerate(names):
            path = tmp_path / base / "images" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            blobs[(base, rel)] = png(path, k + len(base))[1]
    (tmp_path / "wider_face_split").mkdir()
    # fields: x y w h blur expression illumination invalid occlusion pose
    (tmp_path / "wider_face_split/wider_face_train_bbx_gt.txt").write_text(
        "0--Parade/b.jpg\n2\n10 20 30 40 2 0 1 0 1 0 \n5 6 7 8 0 1 0 1 2 1 \n"
        "1--Handshaking/c.jpg\n0\n0 0 0 0 0 0 0 0 0 0 \n0--Parade/a.jpg\n1\n1 2 3 4 1 1 1 0 0 1 \n")
    (tmp_path / "wider_face_split/wider_face_val_bbx_gt.txt").write_text(
        "0--Parade/v.jpg\n1\n9 9 9 9 0 0 0 0 0 0\n")
    d = ds.WIDERFaceDataset(str(tmp_path), "train", shuffle=False)
    assert d.get_col_names() == ["image", "bbox", "blur", "expression", "illumination",
                                 "occlusion", "pose", "invalid"]
    got = rows(d)
    assert [r[0].tobytes() for r in got] == [blobs[("WIDER_train", n)] for n in
                                             ("0--Parade/a.jpg", "0--Parade/b.jpg",
                                              "1--Handshaking/c.jpg")]
    _, bbox, blur, expression, illumination, occlusion, pose, invalid = got[1]
    assert bbox.dtype == np.uint32 and bbox.tolist() == [[10, 20, 30, 40], [5, 6, 7, 8]]
    assert (blur.tolist(), expression.tolist(), illumination.tolist()) == ([2, 0], [0, 1], [1, 0])
    assert (occlusion.tolist(), pose.tolist(), invalid.tolist()) == ([1, 2], [0, 1], [0, 1])
    assert got[2][1].tolist() == [[0, 0, 0, 0]]                   # no face: one zero line
    assert len(rows(ds.WIDERFaceDataset(str(tmp_path), shuffle=False))) == 4
    test = ds.WIDERFaceDataset(str(tmp_path), "test", shuffle=False)
    assert test.get_col_names() == ["image"]
    assert rows(test)[0][0].tobytes() == blobs[("WIDER_test", "0--Parade/t.jpg")]


def test_kitti_objects_columns_and_dtypes(tmp_path):
    img = tmp_path / "data_object_image_2/training/image_2"
    lab = tmp_path / "data_object_label_2/training/label_2"
    img.mkdir(parents=True)
    lab.mkdir(parents=True)
    blobs = [png(img / f"{k:06d}.png", k)[1] for k in range(3)]
    (lab / "000000.txt").write_text(
        "Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01\n"
        "Car 0.50 2 1.5 1 2 3 4 1.5 1.6 3.7 -1 2 30 -1.5\n")
    (lab / "000001.txt").write_text("")                          # no object: left out
    (lab / "000002.txt").write_text("Car 0 1 0 10 20 30 40 1 2 3 4 5 6 7\n")
    d = ds.KITTIDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "label", "truncated", "occluded", "alpha", "bbox",
                                 "dimensions", "location", "rotation_y"]
    got = rows(d)
    assert [r[0].tobytes() for r in got] == [blobs[0], blobs[2]]
    _, label, truncated, occluded, alpha, bbox, dims, loc, rot = got[0]
    assert label.dtype == np.uint32 and label.tolist() == [[1], [0]]       # Car 0, Pedestrian 1
    assert occluded.dtype == np.uint32 and occluded.tolist() == [[0], [2]]
    assert truncated.dtype == np.float32 and truncated.tolist() == [[0.0], [0.5]]
    np.testing.assert_allclose(alpha, [[-0.2], [1.5]], rtol=1e-6)
    np.testing.assert_allclose(bbox, [[712.40, 143.00, 810.73, 307.92], [1, 2, 3, 4]], rtol=1e-6)
    np.testing.assert_allclose(dims, [[1.89, 0.48, 1.20], [1.5, 1.6, 3.7]], rtol=1e-6)
    np.testing.assert_allclose(loc, [[1.84, 1.47, 8.41], [-1, 2, 30]], rtol=1e-6)
    np.testing.assert_allclose(rot, [[0.01], [-1.5]], rtol=1e-6)
    test_dir = tmp_path / "data_object_image_2/testing/image_2"
    test_dir.mkdir(parents=True)
    png(test_dir / "000000.png", 9)
    assert ds.KITTIDataset(str(tmp_path), "test").get_col_names() == ["image"]


def test_lfw_people_and_pairs(tmp_path):
    blobs = {}
    people = {"Aaron_Peirsol": 2, "Abel_Pacheco": 1, "Zico": 3}
    for folder in ("lfw_funneled", "lfw"):
        for name, count in people.items():
            (tmp_path / folder / name).mkdir(parents=True)
            for k in range(1, count + 1):
                blobs[(folder, name, k)] = png(tmp_path / folder / name / f"{name}_{k:04d}.jpg",
                                               len(blobs))[1]
    (tmp_path / "lfw-names.txt").write_text("Aaron_Peirsol\t2\nAbel_Pacheco\t1\nZico\t3\n")
    (tmp_path / "peopleDevTrain.txt").write_text("2\nZico\t2\nAbel_Pacheco\t1\n")
    (tmp_path / "peopleDevTest.txt").write_text("1\nAaron_Peirsol\t1\n")
    (tmp_path / "people.txt").write_text("2\n1\nZico\t1\n1\nAaron_Peirsol\t2\n")
    (tmp_path / "pairsDevTrain.txt").write_text("1\nZico\t1\t3\nAaron_Peirsol\t2\tZico\t2\n")
    d = ds.LFWDataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "label"]
    got = [(i.tobytes(), int(l)) for i, l in rows(d)]
    fun = "lfw_funneled"
    assert got == [(blobs[(fun, "Zico", 1)], 2), (blobs[(fun, "Zico", 2)], 2),
                   (blobs[(fun, "Abel_Pacheco", 1)], 1)]
    assert rows(d)[0][1].dtype == np.uint32
    every = rows(ds.LFWDataset(str(tmp_path), shuffle=False))          # DevTrain, DevTest
    assert [int(r[1]) for r in every] == [2, 2, 1, 0]
    folds = rows(ds.LFWDataset(str(tmp_path), usage="10fold", image_set="original",
                               shuffle=False))
    assert [r[0].tobytes() for r in folds] == [blobs[("lfw", "Zico", 1)],
                                               blobs[("lfw", "Aaron_Peirsol", 1)],
                                               blobs[("lfw", "Aaron_Peirsol", 2)]]
    pairs = ds.LFWDataset(str(tmp_path), task="pairs", usage="train", shuffle=False)
    assert pairs.get_col_names() == ["image1", "image2", "label"]
    (a1, a2, same), (b1, b2, diff) = rows(pairs)
    assert (a1.tobytes(), a2.tobytes(), int(same)) == (blobs[(fun, "Zico", 1)],
                                                       blobs[(fun, "Zico", 3)], 1)
    assert (b1.tobytes(), b2.tobytes(), int(diff)) == (blobs[(fun, "Aaron_Peirsol", 2)],
                                                       blobs[(fun, "Zico", 2)], 0)


# ---- USPS, SVHN, Flickr -------------------------------------------------------------------

def test_usps_libsvm_pixels(tmp_path):
    rng = np.random.default_rng(4)
    values = {name: rng.uniform(-1, 1, (n, 256)).round(6) for name, n in (("usps", 3),
                                                                           ("usps.t", 1))}
    labels = {"usps": [1, 10, 5], "usps.t": [3]}
    for name in values:
        (tmp_path / name).write_text("".join(
            f"{y} " + " ".join(f"{i}:{v:.6f}" for i, v in enumerate(row, 1)) + " \n"
            for y, row in zip(labels[name], values[name])))
    got = rows(ds.USPSDataset(str(tmp_path), "train", shuffle=False))
    for (image, label), row, y in zip(got, values["usps"], labels["usps"]):
        assert image.dtype == np.uint8 and image.shape == (16, 16, 1)
        want = np.floor((row.astype(np.float32).astype(np.float64) + 1) / 2 * 255)
        np.testing.assert_array_equal(image.reshape(-1), want.astype(np.uint8))
        assert label.dtype == np.uint32 and int(label) == y - 1
    assert [int(r[1]) for r in rows(ds.USPSDataset(str(tmp_path), shuffle=False))] == [0, 9, 4, 2]


def test_svhn_mat_files(tmp_path):
    from scipy.io import savemat
    rng = np.random.default_rng(5)
    data = {}
    for part, n in (("train", 3), ("test", 2)):
        x = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = rng.integers(1, 11, (n, 1)).astype(np.float64)
        y[0, 0] = 10
        savemat(tmp_path / f"{part}_32x32.mat", {"X": x, "y": y})
        data[part] = (x, y)
    got = rows(ds.SVHNDataset(str(tmp_path), "train", shuffle=False))
    x, y = data["train"]
    for k, (image, label) in enumerate(got):
        assert image.dtype == np.uint8 and image.shape == (32, 32, 3)
        np.testing.assert_array_equal(image, x[..., k])
        assert label.dtype == np.uint32 and int(label) == int(y[k, 0]) % 10
    with pytest.raises(ValueError, match="extra_32x32.mat' does not exist"):
        ds.SVHNDataset(str(tmp_path))


def test_flickr_captions_grouped_by_image(tmp_path):
    blobs = {n: png(tmp_path / n, k)[1] for k, n in enumerate(["b.jpg", "a.jpg"])}
    (tmp_path / "notes.jpg").write_text("not an image")
    (tmp_path / "captions.txt").write_text(
        "b.jpg#0\tA dog runs .\na.jpg#0\tTwo men .\nb.jpg#1\tThe dog plays .\n"
        "notes.jpg#0\tskipped\n")
    d = ds.FlickrDataset(str(tmp_path), str(tmp_path / "captions.txt"), shuffle=False)
    assert d.get_col_names() == ["image", "annotation"]
    got = [(i.tobytes(), a.tolist()) for i, a in rows(d)]
    assert got == [(blobs["a.jpg"], ["Two men ."]),
                   (blobs["b.jpg"], ["A dog runs .", "The dog plays ."])]


def test_rendered_sst2_splits_and_classes(tmp_path):
    blobs = {}
    for split in ("train", "valid", "test"):
        for cls in ("positive", "negative"):
            for k in range(2):
                path = tmp_path / split / cls / f"{k}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                blobs[(split, cls, k)] = png(path, len(blobs))[1]
    d = ds.RenderedSST2Dataset(str(tmp_path), "val", shuffle=False)
    assert d.get_class_indexing() == {"negative": 0, "positive": 1}
    got = [(i.tobytes(), int(l)) for i, l in rows(d)]
    assert got == [(blobs[("valid", "negative", 0)], 0), (blobs[("valid", "negative", 1)], 0),
                   (blobs[("valid", "positive", 0)], 1), (blobs[("valid", "positive", 1)], 1)]
    assert ds.RenderedSST2Dataset(str(tmp_path)).get_dataset_size() == 12


def test_phototour_patches_and_matches(tmp_path):
    folder = tmp_path / "liberty"
    folder.mkdir()
    rng = np.random.default_rng(6)
    sheets = [rng.integers(0, 256, (1024, 1024), dtype=np.uint8) for _ in range(2)]
    for k, sheet in enumerate(sheets):
        Image.fromarray(sheet).save(folder / f"patches{k:04d}.bmp")
    (folder / "info.txt").write_text("".join(f"{k // 2} 0\n" for k in range(258)))
    (folder / "m50_100000_100000_0.txt").write_text("0 0 0 1 0 0 0\n17 8 0 257 128 0 0\n")
    patch = lambda i: sheets[i // 256][(i % 256) // 16 * 64:(i % 256) // 16 * 64 + 64,  # noqa
                                       i % 16 * 64:i % 16 * 64 + 64]
    train = ds.PhotoTourDataset(str(tmp_path), "liberty", shuffle=False)
    assert train.get_col_names() == ["image"] and train.get_dataset_size() == 258
    got = rows(ds.PhotoTourDataset(str(tmp_path), "liberty", sampler=ds.SubsetSampler([17, 257])))
    assert got[0][0].shape == (64, 64, 1) and got[0][0].dtype == np.uint8
    np.testing.assert_array_equal(got[0][0][..., 0], patch(17))
    np.testing.assert_array_equal(got[1][0][..., 0], patch(257))
    test = ds.PhotoTourDataset(str(tmp_path), "liberty", "test", shuffle=False)
    assert test.get_col_names() == ["image1", "image2", "matches"]
    (a1, a2, m1), (b1, b2, m2) = rows(test)
    np.testing.assert_array_equal(a2[..., 0], patch(1))
    np.testing.assert_array_equal(b1[..., 0], patch(17))
    assert m1.dtype == np.uint32 and (int(m1), int(m2)) == (1, 0)


def test_cityscapes_tasks_and_usages(tmp_path):
    import json
    blobs = {}
    for part in ("train", "val", "test"):
        for k, (city, stem) in enumerate([("bonn", "bonn_000001_000019"),
                                          ("aachen", "aachen_000000_000019")]):
            img = tmp_path / "leftImg8bit" / part / city / f"{stem}_leftImg8bit.png"
            img.parent.mkdir(parents=True, exist_ok=True)
            blobs[(part, stem)] = png(img, k)[1]
            gt = tmp_path / "gtFine" / part / city
            gt.mkdir(parents=True, exist_ok=True)
            blobs[(part, stem, "inst")] = png(gt / f"{stem}_gtFine_instanceIds.png", 10 + k)[1]
            (gt / f"{stem}_gtFine_polygons.json").write_text(json.dumps(
                {"objects": [{"label": "road", "polygon": [[1, 2], [3, 4]]}], "imgWidth": 2048,
                 "imgHeight": 1024}))
    d = ds.CityscapesDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "task"]
    got = [(i.tobytes(), t.tobytes()) for i, t in rows(d)]
    order = ["aachen_000000_000019", "bonn_000001_000019"]           # by path: aachen first
    assert got == [(blobs[("train", s)], blobs[("train", s, "inst")]) for s in order]
    poly = rows(ds.CityscapesDataset(str(tmp_path), "val", task="polygon", shuffle=False))
    assert str(poly[0][1]) == ('{"imgHeight":1024,"imgWidth":2048,"objects":[{"label":"road",'
                               '"polygon":[[1,2],[3,4]]}]}')
    assert ds.CityscapesDataset(str(tmp_path), "all").get_dataset_size() == 6
    with pytest.raises(ValueError, match="'usage' should be one of"):
        ds.CityscapesDataset(str(tmp_path), "train_extra")


def test_mat_reader_structs_cells_and_sparse(tmp_path):
    from scipy import sparse
    from scipy.io import savemat
    from msops.dataset.matfile import load_mat
    masks = np.empty((2, 1), object)
    dense = [np.random.default_rng(k).random((3, 4)) > 0.6 for k in range(2)]
    for k in range(2):
        masks[k, 0] = sparse.csc_matrix(dense[k])
    seg = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for compress in (False, True):
        savemat(tmp_path / "s.mat", {"GTcls": {"Segmentation": seg, "Boundaries": masks},
                                     "w": sparse.csc_matrix(np.array([[0, 1.5], [2, 0]]))},
                do_compression=compress)
        got = load_mat(str(tmp_path / "s.mat"))
        gt = got["GTcls"][0, 0]
        np.testing.assert_array_equal(gt["Segmentation"], seg)
        assert gt["Boundaries"].shape == (2, 1)
        for k in range(2):
            assert gt["Boundaries"][k, 0].dtype == bool
            np.testing.assert_array_equal(gt["Boundaries"][k, 0], dense[k])
        np.testing.assert_array_equal(got["w"], [[0, 1.5], [2, 0]])


def test_sbd_boundaries_and_segmentation(tmp_path):
    from scipy import sparse
    from scipy.io import savemat
    (tmp_path / "img").mkdir()
    (tmp_path / "cls").mkdir()
    rng = np.random.default_rng(8)
    truth = {}
    for k, ident in enumerate(["2008_000002", "2008_000003", "2008_000007"]):
        png(tmp_path / "img" / f"{ident}.jpg", k)
        seg = rng.integers(0, 21, (5, 6), dtype=np.uint8)
        dense = rng.random((20, 5, 6)) > 0.8
        cells = np.empty((20, 1), object)
        for c in range(20):
            cells[c, 0] = sparse.csc_matrix(dense[c])
        savemat(tmp_path / "cls" / f"{ident}.mat",
                {"GTcls": {"Segmentation": seg, "Boundaries": cells,
                           "CategoriesPresent": np.array([[1]], np.uint8)}}, do_compression=True)
        truth[ident] = (seg, dense)
    (tmp_path / "train.txt").write_text("2008_000003\n2008_000002\n")
    (tmp_path / "val.txt").write_text("2008_000007\n")
    d = ds.SBDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "task"]
    got = rows(d)
    assert len(got) == 3
    for (image, task), ident in zip(got, ["2008_000003", "2008_000002", "2008_000007"]):
        assert task.dtype == np.uint8 and task.shape == (20, 5, 6)
        np.testing.assert_array_equal(task, truth[ident][1].astype(np.uint8))
    (image, seg), = rows(ds.SBDataset(str(tmp_path), "Segmentation", "val", decode=True))
    assert image.shape == (4, 5, 3)
    np.testing.assert_array_equal(seg, truth["2008_000007"][0])


def test_lsun_folders_usage_and_classes(tmp_path):
    blobs = {}
    for folder in ("bedroom_train", "bedroom_val", "tower_train", "kitchen_val", "test"):
        (tmp_path / folder).mkdir()
        for k in range(2):
            blobs[(folder, k)] = png(tmp_path / folder / f"{k}_1.jpg", len(blobs))[1]
    got = [(i.tobytes(), int(l)) for i, l in rows(ds.LSUNDataset(str(tmp_path), "train",
                                                                 shuffle=False))]
    assert got == [(blobs[("bedroom_train", 0)], 0), (blobs[("bedroom_train", 1)], 0),
                   (blobs[("tower_train", 0)], 1), (blobs[("tower_train", 1)], 1)]
    every = rows(ds.LSUNDataset(str(tmp_path), classes=["bedroom", "kitchen"], shuffle=False))
    assert [int(r[1]) for r in every] == [0, 0, 1, 1, 2, 2]   # bedroom_train, _val, kitchen_val
    test = rows(ds.LSUNDataset(str(tmp_path), "test", shuffle=False))
    assert [r[0].tobytes() for r in test] == [blobs[("test", 0)], blobs[("test", 1)]]
    with pytest.raises(ValueError, match="'classes' should be among"):
        ds.LSUNDataset(str(tmp_path), classes=["garage"])
