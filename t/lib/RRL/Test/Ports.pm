package RRL::Test::Ports;

# free_port(): a loopback port nobody listens on now (the kernel's choice,
# so test files run in parallel), never the same one twice in a test file:
# the kernel may hand a port just closed out again, and two servers of one
# instance would share it. RRL::Test exports it as RRL::Test::free_port.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use IO::Socket::INET;

our @EXPORT_OK = qw(free_port);

my %given;

sub free_port {
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
            Proto => 'tcp', Listen => 1, ReuseAddr => 1)
            or croak "cannot bind a free port: $!";
        my $port = $s->sockport;
        close $s;
        next if $given{$port}++;
        return $port;
    }
    croak 'no free port not given already';
}

1;
