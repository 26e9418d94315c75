package RRL::Cluster::Slots;

# Redis Cluster's slots, computed as Redis does: CRC16-XMODEM of the key or
# of its hash tag, mod 16384; the module's keys and their slots; the owner
# of a slot in a slot map. RRL::Cluster exports these functions under its
# own name too (RRL::Cluster::keyslot, ...).

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);

our @EXPORT_OK = qw(crc16 keyslot rrl_key rrl_slot keys_in_slot owner_in);

my @CRC16;
for my $i (0 .. 255) {
    my $c = $i << 8;
    for (1 .. 8) {
        $c = ($c & 0x8000) ? (($c << 1) ^ 0x1021) : ($c << 1);
    }
    push @CRC16, $c & 0xffff;
}

sub crc16 {
    my $c = 0;
    $c = (($c << 8) & 0xff00) ^ $CRC16[(($c >> 8) ^ $_) & 0xff]
        for unpack 'C*', $_[0];
    return $c;
}

# the slot of a Redis key: the part between the first '{' and the first
# '}' after it, when not empty, else the whole key
sub keyslot {
    my ($key) = @_;
    my $s = index $key, '{';
    if ($s >= 0) {
        my $e = index $key, '}', $s + 1;
        $key = substr($key, $s + 1, $e - $s - 1) if $e > $s + 1;
    }
    return crc16($key) & 16383;
}

# the module's Redis key of a limit (README: rrl:{<zone>:<key>}:<tag>)
sub rrl_key {
    my ($zone, $key, $tag) = @_;
    return "rrl:{$zone:$key}:" . ($tag // 'sw');
}

# the slot of a limit's key
sub rrl_slot {
    my ($zone, $key, $tag) = @_;
    return keyslot(rrl_key($zone, $key, $tag));
}

# $n client keys "$prefix<i>" whose limit key in $zone is in $slot
sub keys_in_slot {
    my ($slot, $n, $zone, $prefix) = @_;
    $prefix //= 'k';
    my @k;
    for (my $i = 0; @k < $n; $i++) {
        croak "no key found for slot $slot" if $i > 5_000_000;
        push @k, "$prefix$i" if rrl_slot($zone, "$prefix$i") == $slot;
    }
    return @k;
}

# owner_in($map, $slot): the port serving a slot in a slot_map(), undef
# when none does
sub owner_in {
    my ($map, $slot) = @_;
    for my $r (@$map) {
        return $r->[2] if $slot >= $r->[0] && $slot <= $r->[1];
    }
    return undef;
}

1;
