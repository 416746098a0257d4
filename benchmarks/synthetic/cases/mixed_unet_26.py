"""Small UNet with skip connections, size-matching pads on the decoder side and debug logging."""
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("unet")


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(2, cout), nn.SiLU())


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
        self.conv = conv_block(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy = x2.size(2) - x1.size(2)
        dx = x2.size(3) - x1.size(3)
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    def __init__(self, in_ch=3, base=4, n_classes=2, verbose=False):
        super().__init__()
        self.verbose = verbose
        self.inc = conv_block(in_ch, base)
        self.downs = nn.ModuleList([conv_block(base, base * 2), conv_block(base * 2, base * 4)])
        self.ups = nn.ModuleList([Up(base * 4, base * 2), Up(base * 2, base)])
        self.outc = nn.Conv2d(base, n_classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(F.max_pool2d(skips[-1], 2)))
        h = skips.pop()
        for up in self.ups:
            h = up(h, skips.pop())
        if self.verbose:
            log.info("unet output %s", tuple(h.shape))
        return self.outc(h)


def make_inputs():
    return [((), (torch.randn(1, 3, 16, 16),)) for _ in range(2)]


def make_inputs_verbose():
    return [((3, 4, 2, True), (torch.randn(1, 3, 16, 16),)) for _ in range(2)]


EXAMPLES = {"UNet": make_inputs}


class VerboseUNet(UNet):
    pass


EXAMPLES["VerboseUNet"] = make_inputs_verbose
