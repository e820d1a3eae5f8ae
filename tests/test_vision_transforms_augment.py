"""msops.dataset.vision automatic augmentation and conversions: RandAugment's outputs each
match one of the candidate operations computed here with Pillow directly (ImageOps,
ImageEnhance, Image.rotate / transform), seeded determinism of AutoAugment /
TrivialAugmentWide, the policy combinators' outcome frequencies, and ConvertColor,
SlicePatches, NormalizePad, ToType, ToPIL against numpy written here."""
import math

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

import msops as ms
from msops import dataset as ds
from msops.dataset import vision
from msops.dataset.vision import AutoAugmentPolicy, ConvertMode, SliceMode


def rgb(h=16, w=20, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3)).astype(np.uint8)


def rand_augment_candidates(x, level, bins):
    """name -> candidate images for RandAugment at `level` of `bins`, computed with PIL."""
    pil = Image.fromarray(x)
    h, w = x.shape[:2]
    lin = lambda hi: hi * level / (bins - 1)
    shear, rot, enh = lin(0.3), lin(30.0), lin(0.9)
    tx, ty = int(lin(150.0 / 331.0 * w)), int(lin(150.0 / 331.0 * h))
    affine = lambda m: np.asarray(pil.transform((w, h), Image.AFFINE, m, Image.NEAREST))
    bits = int(np.rint(8 - level / ((bins - 1) / 4)))
    out = {"Identity": [x],
           "ShearX": [affine((1, s, 0, 0, 1, 0)) for s in (shear, -shear)],
           "ShearY": [affine((1, 0, 0, s, 1, 0)) for s in (shear, -shear)],
           "TranslateX": [affine((1, 0, -t, 0, 1, 0)) for t in (tx, -tx)],
           "TranslateY": [affine((1, 0, 0, 0, 1, -t)) for t in (ty, -ty)],
           "Rotate": [np.asarray(pil.rotate(a, Image.NEAREST)) for a in (rot, -rot)],
           "Posterize": [np.asarray(ImageOps.posterize(pil, bits))],
           "Solarize": [np.asarray(ImageOps.solarize(pil, 255.0 - lin(255.0)))],
           "AutoContrast": [np.asarray(ImageOps.autocontrast(pil))],
           "Equalize": [vision.Equalize()(x)]}
    for name, enhancer in (("Brightness", ImageEnhance.Brightness), ("Color", ImageEnhance.Color),
                           ("Contrast", ImageEnhance.Contrast),
                           ("Sharpness", ImageEnhance.Sharpness)):
        out[name] = [np.asarray(enhancer(pil).enhance(1 + e)) for e in (enh, -enh)]
    return out


def matches(a, b):
    # colour ops within one level (PIL truncates), geometry up to edge-tie pixels
    return a.shape == b.shape and np.mean(np.abs(a.astype(int) - b.astype(int)) > 1) < 0.02


def test_rand_augment_ops_match_pil_candidates():
    x = rgb()
    ms.set_seed(7)
    op = vision.RandAugment(num_ops=1, magnitude=9, num_magnitude_bins=31)
    cands = rand_augment_candidates(x, 9, 31)
    seen = {}
    for _ in range(150):
        out = op(x)
        names = [n for n, imgs in cands.items() if any(matches(out, c) for c in imgs)]
        assert names, "an output matched no RandAugment operation"
        for n in names:
            seen[n] = seen.get(n, 0) + 1
    assert len(seen) == 14                      # every operation drawn at least once
    ms.set_seed(7)
    again = vision.RandAugment(num_ops=1, magnitude=9, num_magnitude_bins=31)
    ms.set_seed(7)
    first = vision.RandAugment(num_ops=1, magnitude=9, num_magnitude_bins=31)
    assert all(np.array_equal(first(x), again(x)) for _ in range(10))


def test_auto_augment_and_trivial_augment_seeded():
    x = rgb(12, 12, seed=1)
    for make in (lambda: vision.AutoAugment(), lambda: vision.AutoAugment(AutoAugmentPolicy.SVHN),
                 lambda: vision.AutoAugment(AutoAugmentPolicy.CIFAR10, fill_value=(5, 6, 7)),
                 lambda: vision.TrivialAugmentWide(), lambda: vision.RandAugment(3, 20)):
        ms.set_seed(1)
        op = make()
        outs = [op(x) for _ in range(25)]
        ms.set_seed(1)
        again = make()
        assert all(np.array_equal(o, again(x)) for o in outs)
        assert all(o.shape == x.shape and o.dtype == np.uint8 for o in outs)
        assert len({o.tobytes() for o in outs}) > 5
    # SVHN's sub-policies each hold a shear, an Invert, an Equalize or a Solarize at high
    # probability: most images change
    ms.set_seed(2)
    svhn = vision.AutoAugment(AutoAugmentPolicy.SVHN)
    changed = np.mean([not np.array_equal(svhn(x), x) for _ in range(100)])
    assert changed > 0.6


def test_auto_augment_policy_tables():
    from msops.dataset.vision.augment import policy_table
    imagenet = policy_table(AutoAugmentPolicy.IMAGENET)
    cifar = policy_table(AutoAugmentPolicy.CIFAR10)
    svhn = policy_table(AutoAugmentPolicy.SVHN)
    assert len(imagenet) == len(cifar) == len(svhn) == 25
    # first sub-policies of the paper's Appendix tables
    assert imagenet[0] == (("Posterize", 0.4, 8), ("Rotate", 0.6, 9))
    assert cifar[0] == (("Invert", 0.1, None), ("Contrast", 0.2, 6))
    assert svhn[0] == (("ShearX", 0.9, 4), ("Invert", 0.2, None))
    for table in (imagenet, cifar, svhn):
        for sub in table:
            assert all(0 <= p <= 1 and (lvl is None or 0 <= lvl <= 9) for _, p, lvl in sub)


def test_uniform_augment_and_random_select_subpolicy_frequencies():
    x = np.array([1])
    add1, times10, add100 = (lambda a: a + 1), (lambda a: a * 10), (lambda a: a + 100)
    ms.set_seed(3)
    op = vision.UniformAugment([add1, times10, add100], num_ops=2)
    outs = [int(op(x)[0]) for _ in range(600)]
    # allowed: a subset of two chosen ops, each kept with prob 1/2, in list order
    allowed = {1, 2, 10, 20} | {1, 2, 101, 102} | {1, 10, 101, 110}
    assert set(outs) == allowed
    applied_add100 = np.mean([o in (101, 102, 110) for o in outs])
    assert abs(applied_add100 - 1 / 3) < 0.07         # chosen 2/3 of the time, kept half
    sel = vision.RandomSelectSubpolicy([[(add1, 1.0), (times10, 0.5)], [(add100, 1)]])
    outs = [int(sel(x)[0]) for _ in range(800)]
    assert set(outs) == {2, 20, 101}
    assert abs(outs.count(101) / 800 - 0.5) < 0.06 and abs(outs.count(20) / 800 - 0.25) < 0.05


def test_augment_in_pipeline():
    data = np.stack([rgb(10, 10, seed=k) for k in range(4)])
    ms.set_seed(5)
    d = ds.NumpySlicesDataset(data, ["image"], shuffle=False).map(
        [vision.RandAugment(), vision.UniformAugment([vision.Invert(), vision.Equalize(),
                                                      vision.HorizontalFlip()]),
         vision.ToType(np.float32)], "image")
    out = [r[0] for r in d.create_tuple_iterator(output_numpy=True)]
    assert len(out) == 4 and out[0].dtype == np.float32 and out[0].shape == (10, 10, 3)


def test_convert_color():
    x = rgb(4, 5)
    bgr = x[..., ::-1]
    cv = lambda m: vision.ConvertColor(m)
    np.testing.assert_array_equal(cv(ConvertMode.COLOR_RGB2BGR)(x), bgr)
    np.testing.assert_array_equal(cv(ConvertMode.COLOR_BGR2RGB)(bgr), x)
    rgba = cv(ConvertMode.COLOR_RGB2RGBA)(x)
    assert rgba.shape == (4, 5, 4) and (rgba[..., 3] == 255).all()
    np.testing.assert_array_equal(rgba[..., :3], x)
    bgra = cv(ConvertMode.COLOR_RGBA2BGRA)(rgba)
    np.testing.assert_array_equal(bgra, np.concatenate([bgr, rgba[..., 3:]], -1))
    np.testing.assert_array_equal(cv(ConvertMode.COLOR_BGRA2RGB)(bgra), x)
    g = cv(ConvertMode.COLOR_RGB2GRAY)(x)
    want = 0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]
    assert g.shape == (4, 5) and np.abs(g - np.rint(want)).max() <= 1
    np.testing.assert_array_equal(cv(ConvertMode.COLOR_BGR2GRAY)(bgr), g)
    np.testing.assert_array_equal(cv(ConvertMode.COLOR_RGBA2GRAY)(rgba), g)
    back = cv(ConvertMode.COLOR_GRAY2BGRA)(g)
    assert back.shape == (4, 5, 4) and (back[..., :3] == g[..., None]).all()
    with pytest.raises(ValueError, match="For 'ConvertColor', a RGBA input of COLOR_RGBA2RGB "
                                         "should have 4 channel"):
        cv(ConvertMode.COLOR_RGBA2RGB)(x)


def test_slice_patches_normalize_pad_to_type_to_pil():
    x = rgb(7, 9)
    pad = vision.SlicePatches(2, 4, SliceMode.PAD, 3)(x)
    assert len(pad) == 8 and all(p.shape == (4, 3, 3) for p in pad)
    np.testing.assert_array_equal(pad[5], x[4:7, 3:6].tolist() + [[[3] * 3] * 3])
    drop = vision.SlicePatches(2, 4, SliceMode.DROP)(x)
    assert all(p.shape == (3, 2, 3) for p in drop)
    np.testing.assert_array_equal(drop[7], x[3:6, 6:8])
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    npad = vision.NormalizePad(mean, std, "float16")(x)
    assert npad.shape == (7, 9, 4) and npad.dtype == np.float16 and (npad[..., 3] == 0).all()
    np.testing.assert_allclose(npad[..., :3], (x - np.array(mean)) / np.array(std), rtol=1e-3)
    chw = vision.NormalizePad(mean, std, is_hwc=False)(x.transpose(2, 0, 1))
    assert chw.shape == (4, 7, 9) and chw.dtype == np.float32
    assert vision.ToType(ms.int32)(x).dtype == np.int32
    pil = vision.ToPIL()(x)
    assert isinstance(pil, Image.Image) and pil.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(pil), x)
    assert vision.ToPIL()(pil) is pil
    np.testing.assert_array_equal(vision.Invert()(pil), 255 - x)      # PIL images are taken
    with pytest.raises(ValueError, match="For 'NormalizePad', every 'std' value should be in"):
        vision.NormalizePad([1.0] * 3, [0.0] * 3)


def test_augment_errors():
    with pytest.raises(ValueError, match=r"For 'RandAugment', the 'magnitude' should be in \[0, "
                                         r"31\), but got 31"):
        vision.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="For 'TrivialAugmentWide', the 'num_magnitude_bins' "
                                         "should be at least 2, but got 1"):
        vision.TrivialAugmentWide(1)
    with pytest.raises(TypeError, match="For 'AutoAugment', the 'policy' should be an "
                                        "AutoAugmentPolicy"):
        vision.AutoAugment("imagenet")
    with pytest.raises(ValueError, match="For 'AutoAugment', the input should be an RGB image"):
        vision.AutoAugment()(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="For 'UniformAugment', the 'num_ops' should be at most"):
        vision.UniformAugment([vision.Invert()], 2)
    with pytest.raises(TypeError, match="For 'RandomSelectSubpolicy', the 'policy' should be"):
        vision.RandomSelectSubpolicy([[(vision.Invert(), 2.0)]])
