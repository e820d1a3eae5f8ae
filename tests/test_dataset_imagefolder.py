"""ImageFolderDataset, vision.Decode, RandomResizedCrop and RandomCropDecodeResize over tiny
image folders written here with Pillow from known arrays (PNG is lossless, so decoded pixels
must equal the arrays exactly; JPEG is checked within a tolerance)."""
import io
import sys

import numpy as np
import pytest
from PIL import Image                # the test extra has pillow

import msops as ms
from msops import dataset as ds
from msops.dataset import vision
from msops.dataset.vision import Inter


def png_bytes(array):
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def folder(tmp_path):
    """classes 'dog', 'cat', 'bird' (labels by sorted name: bird 0, cat 1, dog 2), PNGs of
    different sizes, a non-image file that `extensions` filters out."""
    rng = np.random.default_rng(0)
    arrays = {}
    for c, name in enumerate(["dog", "cat", "bird"]):
        (tmp_path / name).mkdir()
        for k in range(c + 2):
            array = rng.integers(0, 256, (5 + k, 7 + c, 3), dtype=np.uint8)
            path = tmp_path / name / f"img{k}.png"
            path.write_bytes(png_bytes(array))
            arrays[str(path)] = array
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    (tmp_path / "README").write_text("a file beside the class folders is ignored")
    return tmp_path, arrays


def rows(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


def expected_rows(root, arrays, labels):
    """(bytes, label, array) in MindSpore's order: folders by name, files by name."""
    out = []
    for name in sorted(labels):
        for path in sorted(p for p in arrays if p.startswith(str(root / name) + "/")):
            out.append((open(path, "rb").read(), labels[name], arrays[path]))
    return out


def test_rows_labels_order_and_decode(folder):
    root, arrays = folder
    d = ds.ImageFolderDataset(str(root), shuffle=False, extensions=[".PNG"])
    assert d.get_col_names() == ["image", "label"]
    assert d.get_class_indexing() == {"bird": 0, "cat": 1, "dog": 2} and d.num_classes() == 3
    want = expected_rows(root, arrays, {"bird": 0, "cat": 1, "dog": 2})
    got = rows(d)
    assert d.get_dataset_size() == len(want) == len(got) == 9
    for (image, label), (raw, lab, _) in zip(got, want):
        assert image.dtype == np.uint8 and image.ndim == 1 and image.tobytes() == raw
        assert label.dtype == np.uint32 and label.shape == () and int(label) == lab
    decoded = rows(ds.ImageFolderDataset(root, shuffle=False, extensions=[".png"], decode=True))
    for (image, label), (_, lab, array) in zip(decoded, want):
        assert image.dtype == np.uint8
        np.testing.assert_array_equal(image, array)
        assert int(label) == lab
    # without `extensions` every file is a row (as MindSpore): notes.txt fails to decode
    assert len(rows(ds.ImageFolderDataset(str(root), shuffle=False))) == 10
    with pytest.raises(RuntimeError, match="For 'ImageFolderDataset', .*could not be decoded"):
        rows(ds.ImageFolderDataset(str(root), shuffle=False, decode=True))


def test_class_indexing_labels_and_restricts(folder):
    root, arrays = folder
    d = ds.ImageFolderDataset(str(root), shuffle=False, class_indexing={"dog": 7, "bird": 3},
                              extensions=[".png"])
    want = expected_rows(root, arrays, {"bird": 3, "dog": 7})
    got = rows(d)
    assert [(r[0].tobytes(), int(r[1])) for r in got] == [(w[0], w[1]) for w in want]
    assert d.get_class_indexing() == {"dog": 7, "bird": 3} and d.num_classes() == 2


def test_shards_cover_the_rows_and_seeded_shuffles(folder):
    root, arrays = folder
    kw = dict(extensions=[".png"])
    whole = sorted((r[0].tobytes(), int(r[1])) for r in
                   rows(ds.ImageFolderDataset(str(root), shuffle=False, **kw)))
    for shards in (2, 3, 4):
        parts = [[(r[0].tobytes(), int(r[1])) for r in rows(ds.ImageFolderDataset(
            str(root), shuffle=True, num_shards=shards, shard_id=k, **kw))] for k in range(shards)]
        assert all(len(p) == -(-9 // shards) for p in parts)         # equal, ceil(9 / n)
        union = [row for p in parts for row in p]
        assert set(union) == set(whole)
        if 9 % shards == 0:                                           # no padding: a partition
            assert sorted(union) == whole
    ms.set_seed(3)
    a = ds.ImageFolderDataset(str(root), **kw)                        # shuffled by default
    it = a.create_tuple_iterator(output_numpy=True)
    epoch0 = [r[0].tobytes() for r in it]
    epoch1 = [r[0].tobytes() for r in it]
    ms.set_seed(3)
    it = ds.ImageFolderDataset(str(root), **kw).create_tuple_iterator(output_numpy=True)
    assert [r[0].tobytes() for r in it] == epoch0
    assert [r[0].tobytes() for r in it] == epoch1
    assert epoch0 != epoch1 and sorted(epoch0) == sorted(w[0] for w in whole)
    assert len(rows(ds.ImageFolderDataset(str(root), num_samples=4, **kw))) == 4
    got = rows(ds.ImageFolderDataset(str(root), sampler=ds.SubsetSampler([8, 0]), **kw))
    assert [int(r[1]) for r in got] == [2, 0]


def test_decrypt_reads_through_the_callable(folder):
    root, arrays = folder
    seen = []

    def decrypt(path):
        seen.append(path)
        return open(path, "rb").read()

    got = rows(ds.ImageFolderDataset(str(root), shuffle=False, decode=True, decrypt=decrypt,
                                     class_indexing={"bird": 0}))
    paths = sorted(p for p in arrays if "/bird/" in p)
    assert seen == paths
    for (image, _), path in zip(got, paths):
        np.testing.assert_array_equal(image, arrays[path])


def test_imagefolder_errors(folder, tmp_path_factory):
    root, _ = folder
    api = "For 'ImageFolderDataset', "
    with pytest.raises(ValueError, match=api + "the 'dataset_dir' should be an existing "
                                               "directory, but got '/nope'"):
        ds.ImageFolderDataset("/nope")
    with pytest.raises(TypeError, match=api + "the type of 'dataset_dir' should be str"):
        ds.ImageFolderDataset(3)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(ValueError, match=api + ".*class sub-folders with image files"):
        ds.ImageFolderDataset(str(empty))
    with pytest.raises(ValueError, match=api + ".*ending in \\['.jpeg'\\]"):
        ds.ImageFolderDataset(str(root), extensions=[".JPEG"])
    with pytest.raises(TypeError, match=api + "the 'extensions' should be a list of str"):
        ds.ImageFolderDataset(str(root), extensions=".png")
    with pytest.raises(TypeError, match=api + "the 'class_indexing' should be a dict"):
        ds.ImageFolderDataset(str(root), class_indexing={"cat": -1})
    with pytest.raises(TypeError, match=api + "the 'decode' should be bool"):
        ds.ImageFolderDataset(str(root), decode=1)
    with pytest.raises(ValueError, match=api + "the 'cache' is not supported"):
        ds.ImageFolderDataset(str(root), cache=object())
    with pytest.raises(ValueError, match=api + "the 'shard_id' should be < num_shards"):
        ds.ImageFolderDataset(str(root), num_shards=2, shard_id=2)
    with pytest.raises(TypeError, match=api + "the 'decrypt' should return the file's bytes"):
        rows(ds.ImageFolderDataset(str(root), decrypt=lambda p: "text"))


# -- Decode ------------------------------------------------------------------------------------
def test_decode_png_grey_rgba_jpeg_and_pil():
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (6, 9, 3), dtype=np.uint8)
    raw = np.frombuffer(png_bytes(rgb), np.uint8)
    out = vision.Decode()(raw)
    assert out.dtype == np.uint8 and out.shape == (6, 9, 3)
    np.testing.assert_array_equal(out, rgb)
    np.testing.assert_array_equal(vision.Decode()(png_bytes(rgb)), rgb)      # bytes too
    np.testing.assert_array_equal(vision.Decode()(ms.Tensor(raw)), rgb)      # and Tensors
    grey = rng.integers(0, 256, (4, 5), dtype=np.uint8)                      # replicated to RGB
    np.testing.assert_array_equal(vision.Decode()(png_bytes(grey)), np.repeat(grey[..., None],
                                                                              3, axis=2))
    rgba = rng.integers(0, 256, (4, 5, 4), dtype=np.uint8)                   # alpha dropped
    np.testing.assert_array_equal(vision.Decode()(png_bytes(rgba)), rgba[..., :3])
    smooth = np.broadcast_to(np.linspace(40, 200, 16).astype(np.uint8)[None, :, None],
                             (16, 16, 3)).copy()
    buf = io.BytesIO()
    Image.fromarray(smooth).save(buf, "JPEG", quality=95)
    jpeg = vision.Decode()(np.frombuffer(buf.getvalue(), np.uint8))
    assert jpeg.shape == (16, 16, 3) and np.abs(jpeg.astype(int) - smooth).max() <= 6
    pil = vision.Decode(to_pil=True)(raw)
    assert pil.mode == "RGB" and pil.size == (9, 6)
    np.testing.assert_array_equal(vision.HWC2CHW()(pil), rgb.transpose(2, 0, 1))  # PIL accepted


def test_decode_errors():
    with pytest.raises(RuntimeError, match="For 'Decode', the input should be an encoded image "
                                           ".*the 5 bytes could not be decoded"):
        vision.Decode()(np.frombuffer(b"hello", np.uint8))
    with pytest.raises(TypeError, match="For 'Decode', the input should be the encoded image "
                                        "as a 1-D uint8 array or bytes, but got shape "
                                        "\\(2, 2, 3\\)"):
        vision.Decode()(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(TypeError, match="For 'Decode', the type of 'to_pil' should be bool, "
                                        "but got int"):
        vision.Decode(to_pil=1)


# -- RandomResizedCrop -------------------------------------------------------------------------
def coords(h, w):
    """An image whose pixel (i, j) holds (i, j, 0): a crop and a nearest resize of it can be
    read back from the values."""
    i, j = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([i, j, np.zeros_like(i)], axis=2).astype(np.uint8)


def nearest_sources(out_len, src_len):
    """OpenCV's nearest: output position d reads source floor(d * src_len / out_len)."""
    return np.floor(np.arange(out_len) * (src_len / out_len)).astype(int)


def test_random_resized_crop_is_a_resized_crop_in_the_bounds():
    h, w, size = 40, 50, 16
    image = coords(h, w)
    ms.set_seed(11)
    op = vision.RandomResizedCrop(size, interpolation=Inter.NEAREST)
    areas = []
    for _ in range(30):
        out = op(image)
        assert out.shape == (size, size, 3) and out.dtype == np.uint8
        top, left = int(out[0, 0, 0]), int(out[0, 0, 1])
        rows_, cols_ = out[:, 0, 0].astype(int), out[0, :, 1].astype(int)
        assert (out[..., 0] == rows_[:, None]).all() and (out[..., 1] == cols_[None, :]).all()
        # the crop height / width that a nearest resize maps to exactly these rows / columns
        ch = [c for c in range(1, h - top + 1)
              if (top + nearest_sources(size, c) == rows_).all()]
        cw = [c for c in range(1, w - left + 1)
              if (left + nearest_sources(size, c) == cols_).all()]
        assert ch and cw
        area = max(ch) * max(cw) / (h * w)
        assert 0.08 - 0.02 <= area <= 1.0
        assert 3 / 4 - 0.1 <= max(cw) / min(ch) and min(cw) / max(ch) <= 4 / 3 + 0.1
        areas.append(area)
    assert np.std(areas) > 0.05                       # crops really vary
    ms.set_seed(11)                                   # the same seed replays the crops
    a = vision.RandomResizedCrop(size, interpolation=Inter.NEAREST)
    ms.set_seed(11)
    b = vision.RandomResizedCrop(size, interpolation=Inter.NEAREST)
    for _ in range(3):
        np.testing.assert_array_equal(a(image), b(image))


def test_random_resized_crop_cuts_several_images_alike():
    image = coords(30, 40)
    mask = (image.astype(np.int32) * 3).astype(np.int32)
    op = vision.RandomResizedCrop((12, 10), interpolation=Inter.NEAREST)
    for _ in range(5):
        a, b = op(image, mask)
        assert a.shape == (12, 10, 3) and b.shape == (12, 10, 3) and b.dtype == np.int32
        np.testing.assert_array_equal(b, a.astype(np.int32) * 3)    # the same crop
    with pytest.raises(ValueError, match="For 'RandomResizedCrop', the input images should "
                                         "have the same size"):
        op(image, mask[:-1])


def test_random_resized_crop_whole_image_and_fallback():
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    # area 1 at the image's own aspect ratio: the whole image, resized (nearest x2 = repeat)
    op = vision.RandomResizedCrop((8, 12), scale=(1.0, 1.0), ratio=(1.5, 1.5),
                                  interpolation=Inter.NEAREST)
    np.testing.assert_array_equal(op(image), np.repeat(np.repeat(image, 2, 0), 2, 1))
    # bilinear on an exact x2 of a constant-per-row ramp is checked against hand values
    ramp = np.repeat(np.array([[0.0], [8.0]], np.float32), 2, axis=1)         # (2, 2)
    up = vision.RandomResizedCrop((4, 2), scale=(1.0, 1.0), ratio=(1.0, 1.0))(ramp)
    np.testing.assert_allclose(up[:, 0], [0.0, 2.0, 6.0, 8.0])                # centres aligned
    # no draw can fit (area > the image): the central crop at the widest allowed ratio
    wide = rng.integers(0, 256, (10, 40), dtype=np.uint8)
    op = vision.RandomResizedCrop((10, 13), scale=(2.0, 3.0), max_attempts=3)
    # aspect 4 > 4/3: height 10, width round(10 * 4/3) = 13, left round((40 - 13) / 2) = 14
    np.testing.assert_array_equal(op(wide), wide[:, 14:27])
    tall = rng.integers(0, 256, (40, 10, 3), dtype=np.uint8)
    # aspect 1/4 < 3/4: width 10, height round(10 / (3/4)) = 13, top round(27 / 2) = 14
    op = vision.RandomResizedCrop((13, 10), scale=(2.0, 3.0))
    np.testing.assert_array_equal(op(tall), tall[14:27])


def test_random_crop_decode_resize():
    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    raw = np.frombuffer(png_bytes(image), np.uint8)
    op = vision.RandomCropDecodeResize((8, 12), scale=(1.0, 1.0), ratio=(1.5, 1.5),
                                       interpolation=Inter.NEAREST)
    np.testing.assert_array_equal(op(raw), np.repeat(np.repeat(image, 2, 0), 2, 1))
    out = vision.RandomCropDecodeResize(5)(raw)
    assert out.shape == (5, 5, 3) and out.dtype == np.uint8
    with pytest.raises(RuntimeError, match="For 'RandomCropDecodeResize', the input should be "
                                           "an encoded image"):
        vision.RandomCropDecodeResize(5)(np.zeros(10, np.uint8))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(size=0), ValueError, "the 'size' should be a positive int"),
    (dict(size=4, scale=0.5), TypeError, "the 'scale' should be a list or tuple"),
    (dict(size=4, scale=(0.9, 0.1)), ValueError, "the 'scale' should be \\(min, max\\)"),
    (dict(size=4, scale=(-0.1, 1.0)), ValueError, "the 'scale' should be \\(min, max\\)"),
    (dict(size=4, ratio=(0.0, 1.0)), ValueError, "the 'ratio' should be \\(min, max\\) with 0 <"),
    (dict(size=4, ratio=(1, "2")), TypeError, "the 'ratio' should be two numbers"),
    (dict(size=4, max_attempts=0), ValueError, "max_attempts"),
    (dict(size=4, interpolation="bilinear"), TypeError, "the 'interpolation' should be an Inter"),
    (dict(size=4, interpolation=Inter.AREA), NotImplementedError, "Inter.AREA"),
])
def test_random_resized_crop_argument_errors(kwargs, error, match):
    for cls in (vision.RandomResizedCrop, vision.RandomCropDecodeResize):
        with pytest.raises(error, match=f"For '{cls.__name__}', .*{match}"):
            cls(**kwargs)


# -- the ImageNet / ResNet training recipe -----------------------------------------------------
def test_resnet_recipe_runs_and_gives_the_reference_batches(folder):
    root, arrays = folder
    mean, std = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]
    want = expected_rows(root, arrays, {"bird": 0, "cat": 1, "dog": 2})

    def reference(array):
        """The whole image resized (nearest) to 4x4, flipped, normalized, CHW."""
        h, w = array.shape[:2]
        resized = array[nearest_sources(4, h)][:, nearest_sources(4, w)]
        flipped = resized[:, ::-1].astype(np.float32)
        return ((flipped - np.float32(mean)) / np.float32(std)).transpose(2, 0, 1)

    # an area twice the image's: no draw fits, and the fallback (the image's own aspect
    # ratio is inside `ratio`) is the whole image
    crop = dict(scale=(2.0, 2.0), ratio=(0.01, 100.0), interpolation=Inter.NEAREST)
    for first in ([vision.RandomCropDecodeResize(4, **crop)],
                  [vision.Decode(), vision.RandomResizedCrop(4, **crop)]):
        data = ds.ImageFolderDataset(str(root), shuffle=False, extensions=[".png"])
        data = data.map(first + [vision.RandomHorizontalFlip(prob=1.0),
                                 vision.Normalize(mean=mean, std=std), vision.HWC2CHW()],
                        input_columns="image")
        data = data.batch(4, drop_remainder=True)
        batches = list(data.create_tuple_iterator())
        assert len(batches) == 2 == data.get_dataset_size()
        for b, (images, labels) in enumerate(batches):
            assert images.shape == (4, 3, 4, 4) and images.dtype == ms.float32
            rows_ = want[4 * b: 4 * b + 4]
            np.testing.assert_allclose(images.asnumpy(), np.stack([reference(r[2]) for r in rows_]),
                                       rtol=1e-6, atol=1e-6)
            assert labels.asnumpy().tolist() == [r[1] for r in rows_]
    # the default recipe (random crops, random flips, shuffled) runs, seeded, to float batches
    ms.set_seed(5)
    data = ds.ImageFolderDataset(str(root), extensions=[".png"]).map(
        [vision.RandomCropDecodeResize(6), vision.RandomHorizontalFlip(),
         vision.Normalize(mean=mean, std=std), vision.HWC2CHW()], input_columns="image")
    out = [b[0].asnumpy() for b in data.batch(3).create_tuple_iterator()]
    assert [o.shape for o in out] == [(3, 3, 6, 6)] * 3 and all(np.isfinite(o).all() for o in out)


def test_decoding_without_pillow_names_the_extra(monkeypatch):
    # None in sys.modules makes `import PIL` fail, as on a machine without Pillow
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(ImportError, match=r"Decoding images needs Pillow: pip install "
                                          r"'msops\[vision\]'"):
        vision.Decode()(np.zeros(4, np.uint8))


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_imagenet_recipe_trains_a_network_with_model(folder, mode):
    """ImageFolderDataset -> RandomCropDecodeResize -> RandomHorizontalFlip -> Normalize ->
    HWC2CHW, TypeCast on the label -> batch -> Model.train: the losses equal a hand-written
    train loop over batches made with numpy from the written arrays."""
    from msops import Tensor, nn
    from msops.dataset import transforms

    ms.set_context(mode=mode)
    root, arrays = folder
    mean, std = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
    crop = dict(scale=(2.0, 2.0), ratio=(0.01, 100.0), interpolation=Inter.NEAREST)
    data = ds.ImageFolderDataset(str(root), shuffle=False, extensions=[".png"])
    data = data.map(transforms.TypeCast(ms.int32), input_columns="label")
    data = data.map([vision.RandomCropDecodeResize(4, **crop),
                     vision.RandomHorizontalFlip(prob=1.0),
                     vision.Normalize(mean=mean, std=std), vision.HWC2CHW()],
                    input_columns="image").batch(3, drop_remainder=True)

    def numpy_image(array):
        h, w = array.shape[:2]
        x = array[nearest_sources(4, h)][:, nearest_sources(4, w)][:, ::-1].astype(np.float32)
        return ((x - np.float32(mean)) / np.float32(std)).transpose(2, 0, 1)

    want_rows = expected_rows(root, arrays, {"bird": 0, "cat": 1, "dog": 2})
    batches = [(np.stack([numpy_image(r[2]) for r in want_rows[i:i + 3]]),
                np.array([r[1] for r in want_rows[i:i + 3]], np.int32)) for i in (0, 3, 6)]

    def make():
        ms.set_seed(1)
        net = nn.SequentialCell([nn.Flatten(), nn.Dense(48, 3)])
        return net, nn.Momentum(net.trainable_params(), 0.05, 0.9)

    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net, opt = make()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    want = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(2) for x, y in batches]

    net, opt = make()
    losses = []

    class Record(ms.train.callback.Callback):
        def on_train_step_end(self, ctx):
            losses.append(float(ctx.original_args().net_outputs.asnumpy()))
    ms.Model(net, loss, opt).train(2, data, callbacks=[Record()])
    np.testing.assert_allclose(losses, want, rtol=1e-5)
    assert len(losses) == 6 and losses[-1] < losses[0]
