# source: https://github.com/maxrmorrison/torchcrepe/issues/9 (code: torchcrepe/threshold.py before 08321cd, the
#   `At` class, and the test the fix added, tests/test_threshold.py test_at)
# family: silent aliasing: a write into memory the caller owns
# symptom: "torchcrepe.threshold.At modifies inplace, would it make sense to add a clone op at the beginning?"; the
#   maintainer adds `pitch = torch.clone(pitch)` and a test that the input pitch is left as it was
# hazard: `pitch[harmonicity < self.value] = UNVOICED` in At.__call__ writes the caller's pitch tensor, which the
#   caller still holds as its input
# runs-on-cpu: yes. torchcrepe's UNVOICED constant is written out. The in-place check is written as a NaN test: the
#   test's own `assert not (input_pitch == output_pitch).all()` also passes in place (NaN != NaN)
# printed (torch 2.13): AssertionError: thresholding was done in place
import torch

UNVOICED = float('nan')


class At:
    """Simple thresholding at a specified probability value"""

    def __init__(self, value):
        self.value = value

    def __call__(self, pitch, harmonicity):
        pitch[harmonicity < self.value] = UNVOICED  # hazard: GML107
        return pitch


def test_at():
    """Test torchcrepe.threshold.At"""
    input_pitch = torch.tensor([100., 110., 120., 130., 140.])
    harmonicity = torch.tensor([.19, .22, .25, .17, .30])

    # Perform thresholding
    output_pitch = At(.20)(input_pitch, harmonicity)

    # Ensure thresholding is not in-place
    assert not torch.isnan(input_pitch).any(), "thresholding was done in place"

    # Ensure certain frames are marked as unvoiced
    isnan = torch.isnan(output_pitch)
    assert isnan[0] and isnan[3]
    assert not isnan[1] and not isnan[2] and not isnan[4]


if __name__ == '__main__':
    test_at()
    print("ok")
