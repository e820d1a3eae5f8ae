"""MindSpore's LeNet/MNIST tutorial pipeline, changed only in its imports: MnistDataset over
idx files written here -> vision Resize/Rescale/HWC2CHW, transforms.TypeCast on the label
-> batch -> Model.train; the losses equal a hand-written train loop over batches made
with numpy from the written arrays, compiled and eager."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops import dataset as ds
from msops.dataset import transforms, vision
from msops.dataset.vision import Inter
from msops.train.callback import Callback

from nets import LeNet5
from test_dataset_readers import mnist_arrays, write_idx


def tutorial_dataset(path, batch_size=4):
    """create_dataset of MindSpore's LeNet tutorial (shuffle off, to compare batches)."""
    mnist_ds = ds.MnistDataset(path, usage="train", shuffle=False)
    resize_op = vision.Resize((32, 32), interpolation=Inter.LINEAR)
    rescale_nml_op = vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081)
    rescale_op = vision.Rescale(1.0 / 255.0, 0.0)
    hwc2chw_op = vision.HWC2CHW()
    type_cast_op = transforms.TypeCast(ms.int32)
    mnist_ds = mnist_ds.map(operations=type_cast_op, input_columns="label")
    mnist_ds = mnist_ds.map(operations=[resize_op, rescale_op, rescale_nml_op, hwc2chw_op],
                            input_columns="image")
    return mnist_ds.batch(batch_size, drop_remainder=True)


def numpy_batches(images, labels, batch_size=4):
    out = []
    for i in range(0, len(images) - batch_size + 1, batch_size):
        x = np.stack([vision.Resize((32, 32))(im[..., None]) for im in images[i:i + batch_size]])
        x = (x.astype(np.float32) / 255.0 - 0.1307) / 0.3081
        out.append((x.transpose(0, 3, 1, 2).astype(np.float32),
                    labels[i:i + batch_size].astype(np.int32)))
    return out


def make():
    ms.set_seed(1)
    net = LeNet5()
    return net, nn.Momentum(net.trainable_params(), 0.01, 0.9)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_lenet_tutorial_pipeline_trains(tmp_path, mode):
    ms.set_context(mode=mode)
    images, labels = mnist_arrays(10, 4)
    write_idx(tmp_path, "train", images, labels)
    data = tutorial_dataset(str(tmp_path))
    assert data.get_dataset_size() == 2
    x, y = next(data.create_tuple_iterator())
    assert x.shape == (4, 1, 32, 32) and x.dtype == ms.float32 and y.dtype == ms.int32

    batches = numpy_batches(images, labels)
    np.testing.assert_allclose(x.asnumpy(), batches[0][0], rtol=1e-5, atol=1e-5)
    net, opt = make()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
        sparse=True, reduction="mean")), opt)
    want = [float(step(Tensor(bx), Tensor(by)).asnumpy()) for _ in range(2) for bx, by in batches]

    net, opt = make()
    losses = []

    class Record(Callback):
        def on_train_step_end(self, ctx):
            losses.append(float(ctx.original_args().net_outputs.asnumpy()))
    model = ms.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
    model.train(2, data, callbacks=[Record()])
    np.testing.assert_allclose(losses, want, rtol=1e-5)
    assert all(np.isfinite(losses))
